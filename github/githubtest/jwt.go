package githubtest

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// maxJWTLen bounds the Authorization header the fake accepts.
const maxJWTLen = 8 << 10

// GitHub refuses App JWTs that live longer than ten minutes; it allows a
// little clock drift on the issue time.
const (
	maxJWTLifetime = 10*time.Minute + time.Second
	clockSkew      = time.Minute
)

// verifyJWT checks an "Authorization: Bearer <jwt>" header: RS256 signature
// with pub, issuer appID, issued no later than now plus skew, not expired,
// lifetime at most ten minutes.
func verifyJWT(header string, pub *rsa.PublicKey, appID int64, now time.Time) error {
	raw, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return errors.New("no bearer token")
	}
	if len(raw) > maxJWTLen {
		return errors.New("token too long")
	}
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return errors.New("not a JWS compact serialisation")
	}
	var hdr struct {
		Alg string `json:"alg"`
	}
	if err := decodeSegment(parts[0], &hdr); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if hdr.Alg != "RS256" {
		return fmt.Errorf("alg %q, want RS256", hdr.Alg)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return fmt.Errorf("signature encoding: %w", err)
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig); err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	var claims struct {
		Iss json.RawMessage `json:"iss"`
		Iat *int64          `json:"iat"`
		Exp *int64          `json:"exp"`
	}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return fmt.Errorf("claims: %w", err)
	}
	if iss := strings.Trim(string(claims.Iss), `"`); iss != strconv.FormatInt(appID, 10) {
		return fmt.Errorf("issuer %s, want %d", iss, appID)
	}
	if claims.Iat == nil || claims.Exp == nil {
		return errors.New("iat and exp are required")
	}
	iat, exp := time.Unix(*claims.Iat, 0), time.Unix(*claims.Exp, 0)
	switch {
	case iat.After(now.Add(clockSkew)):
		return errors.New("issued in the future")
	case !exp.After(now):
		return errors.New("expired")
	case exp.Sub(iat) > maxJWTLifetime:
		return errors.New("lifetime longer than ten minutes")
	}
	return nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
