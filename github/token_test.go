package github

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestTokenNeverPrintsValue(t *testing.T) {
	const secret = "ghs_supersecretvalue123"
	tok := Token{Value: secret, ExpiresAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("tok", "token", tok, "nested", map[string]any{"t": tok})
	slog.New(slog.NewTextHandler(&logs, nil)).Info("tok", "token", tok, "ptr", &tok)
	js, err := json.Marshal(map[string]any{"t": tok})
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{
		"%v": fmt.Sprintf("%v", tok), "%+v": fmt.Sprintf("%+v", tok), "%#v": fmt.Sprintf("%#v", tok),
		"%s": fmt.Sprintf("%s", tok), "%q": fmt.Sprintf("%q", tok), "%x": fmt.Sprintf("%x", tok),
		"ptr %v": fmt.Sprintf("%v", &tok), "in struct": fmt.Sprintf("%+v", struct{ T Token }{tok}),
		"slog": logs.String(), "json": string(js),
	}
	for name, out := range outputs {
		if strings.Contains(out, secret) {
			t.Errorf("%s output leaks the token: %s", name, out)
		}
	}
	if !strings.Contains(outputs["%v"], "2030-01-01") || !strings.Contains(logs.String(), "expires_at") {
		t.Errorf("token output should show the expiry: %s / %s", outputs["%v"], logs.String())
	}
}

func TestTokenValid(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		tok  Token
		want bool
	}{
		{"fresh", Token{Value: "v", ExpiresAt: now.Add(time.Minute)}, true},
		{"expired", Token{Value: "v", ExpiresAt: now.Add(-time.Second)}, false},
		{"expires now", Token{Value: "v", ExpiresAt: now}, false},
		{"empty", Token{ExpiresAt: now.Add(time.Hour)}, false},
	}
	for _, tt := range tests {
		if got := tt.tok.Valid(now); got != tt.want {
			t.Errorf("%s: Valid = %v, want %v", tt.name, got, tt.want)
		}
	}
}
