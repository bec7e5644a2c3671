package githubtest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

var testKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

func seg(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func sign(t *testing.T, key *rsa.PrivateKey, header, claims any) string {
	t.Helper()
	input := seg(t, header) + "." + seg(t, claims)
	digest := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func TestVerifyJWT(t *testing.T) {
	key := testKey()
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_900_000_000, 0)
	rs256 := map[string]string{"alg": "RS256", "typ": "JWT"}
	claims := func(iss any, iat, exp time.Time) map[string]any {
		return map[string]any{"iss": iss, "iat": iat.Unix(), "exp": exp.Unix()}
	}
	good := claims("42", now.Add(-30*time.Second), now.Add(90*time.Second))
	valid := sign(t, key, rs256, good)
	parts := strings.Split(valid, ".")
	tampered := parts[0] + "." + seg(t, claims("43", now.Add(-30*time.Second), now.Add(90*time.Second))) + "." + parts[2]

	tests := []struct {
		name, header, want string
	}{
		{"valid string issuer", "Bearer " + valid, ""},
		{"valid numeric issuer", "Bearer " + sign(t, key, rs256, claims(42, now, now.Add(time.Minute))), ""},
		{"no bearer", valid, "no bearer"},
		{"token scheme", "token " + valid, "no bearer"},
		{"two segments", "Bearer a.b", "compact"},
		{"alg none", "Bearer " + sign(t, key, map[string]string{"alg": "none"}, good), "alg"},
		{"wrong key", "Bearer " + sign(t, other, rs256, good), "signature"},
		{"tampered claims", "Bearer " + tampered, "signature"},
		{"wrong issuer", "Bearer " + sign(t, key, rs256, claims("7", now, now.Add(time.Minute))), "issuer"},
		{"expired", "Bearer " + sign(t, key, rs256, claims("42", now.Add(-5*time.Minute), now.Add(-time.Second))), "expired"},
		{"future iat", "Bearer " + sign(t, key, rs256, claims("42", now.Add(5*time.Minute), now.Add(6*time.Minute))), "future"},
		{"too long", "Bearer " + sign(t, key, rs256, claims("42", now, now.Add(11*time.Minute))), "ten minutes"},
		{"missing times", "Bearer " + sign(t, key, rs256, map[string]any{"iss": "42"}), "required"},
		{"huge", "Bearer " + strings.Repeat("a", maxJWTLen+1), "too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := verifyJWT(tt.header, &key.PublicKey, 42, now)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("verifyJWT = %v, want success", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("verifyJWT = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
