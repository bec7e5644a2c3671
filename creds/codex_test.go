package creds

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

const fakeKey = "sk-proj-REALKEY0123456789abcdef"

const authWithKey = `{
  "OPENAI_API_KEY": "` + fakeKey + `",
  "tokens": {"id_token": "idt", "access_token": "at", "refresh_token": "rt", "account_id": "acc"},
  "last_refresh": "2026-01-01T00:00:00Z",
  "auth_mode": "apikey"
}`

func writeCodex(t *testing.T, home, name, data string, mode os.FileMode) string {
	t.Helper()
	dir := filepath.Join(home, CodexDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCodexAuthKeyReplacedOtherFieldsIntact(t *testing.T) {
	home := t.TempDir()
	p := writeCodex(t, home, CodexAuthFile, authWithKey, 0o600)
	a, err := ReadCodexAuth(home)
	if err != nil {
		t.Fatal(err)
	}
	if a.APIKey != fakeKey || !a.HasTokens {
		t.Fatalf("APIKey/HasTokens not read: tokens=%v", a.HasTokens)
	}
	if strings.Contains(a.String()+a.GoString(), fakeKey) {
		t.Fatal("String/GoString leak the key")
	}
	out, err := a.WithAPIKey("podbot-secret-codex-openai-PLACEHOLDER")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte(fakeKey)) {
		t.Fatal("the real key is still in the rewritten auth.json")
	}
	var got, want map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal([]byte(authWithKey), &want)
	want[CodexAPIKeyField] = "podbot-secret-codex-openai-PLACEHOLDER"
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if !bytes.Equal(gb, wb) {
		t.Fatalf("fields changed:\n got %s\nwant %s", gb, wb)
	}
	host, _ := os.ReadFile(p)
	if string(host) != authWithKey {
		t.Fatal("the host's auth.json was modified")
	}
}

func TestCodexAuthWithoutKey(t *testing.T) {
	for _, data := range []string{`{"tokens":{"access_token":"at"}}`, `{"OPENAI_API_KEY":null}`, `{"OPENAI_API_KEY":""}`, `{}`} {
		a, err := ParseCodexAuth("auth.json", []byte(data))
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if a.APIKey != "" {
			t.Fatalf("%s: APIKey %q", data, a.APIKey)
		}
	}
	a, err := ReadCodexAuth(t.TempDir())
	if a != nil || err != nil {
		t.Fatalf("absent file: %v %v", a, err)
	}
}

func TestCodexAuthMalformedRefused(t *testing.T) {
	for _, data := range []string{`{"OPENAI_API_KEY": "` + fakeKey + `"`, `[1]`, `null`, `{"OPENAI_API_KEY": 12}`, `{"a":1} {"OPENAI_API_KEY":"` + fakeKey + `"}`, `OPENAI_API_KEY=` + fakeKey} {
		_, err := ParseCodexAuth("/h/.codex/auth.json", []byte(data))
		var fe *errdefs.FilesystemError
		if !errors.As(err, &fe) || fe.Path != "/h/.codex/auth.json" {
			t.Fatalf("%s: want a FilesystemError naming the file, got %v", data, err)
		}
		if strings.Contains(err.Error(), fakeKey) || strings.Contains(err.Error(), "sk-proj") {
			t.Fatalf("%s: the error quotes the file: %v", data, err)
		}
	}
}

func TestCodexAuthHugeFileBounded(t *testing.T) {
	home := t.TempDir()
	big := `{"OPENAI_API_KEY":"` + fakeKey + `","pad":"` + strings.Repeat("x", MaxCodexAuthBytes) + `"}`
	writeCodex(t, home, CodexAuthFile, big, 0o600)
	_, err := ReadCodexAuth(home)
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("want the size bound, got %v", err)
	}
}

func TestCodexAuthSymlinkRefused(t *testing.T) {
	home := t.TempDir()
	writeCodex(t, home, "real-auth.json", authWithKey, 0o600)
	if err := os.Symlink("real-auth.json", filepath.Join(home, CodexDir, CodexAuthFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCodexAuth(home); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("want a refusal, got %v", err)
	}
}

func TestCodexBaseURLHost(t *testing.T) {
	for _, c := range []struct{ toml, want string }{
		{``, ""},
		{`model = "o3"`, ""},
		{`openai_base_url = "https://gw.example.com/v1"`, "gw.example.com"},
		{`openai_base_url = "https://GW.example.com:8443/v1"`, "gw.example.com:8443"},
		{"openai_base_url = \"http://127.0.0.1:9000\"\n[model_providers.x]\nbase_url = \"https://x.example\"", "127.0.0.1:9000"},
	} {
		got, err := codexBaseURLHost("config.toml", []byte(c.toml))
		if err != nil || got != c.want {
			t.Errorf("%q: got %q, %v; want %q", c.toml, got, err, c.want)
		}
	}
	for _, bad := range []string{`openai_base_url = "ftp://x"`, `openai_base_url = 3`, `= broken`} {
		if _, err := codexBaseURLHost("config.toml", []byte(bad)); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
	home := t.TempDir()
	writeCodex(t, home, CodexConfigFile, `openai_base_url = "https://gw.example.com"`, 0o600)
	if got, err := CodexBaseURLHost(home); err != nil || got != "gw.example.com" {
		t.Fatalf("file: %q %v", got, err)
	}
}

func tarFiles(t *testing.T, b []byte) map[string]*tar.Header {
	t.Helper()
	out := map[string]*tar.Header{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h
	}
}

func TestBuildOverrideKeepsKeyOut(t *testing.T) {
	home := t.TempDir()
	writeCodex(t, home, CodexAuthFile, authWithKey, 0o640)
	writeCodex(t, home, CodexConfigFile, `model = "o3"`, 0o600)
	a, err := ReadCodexAuth(home)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := a.WithAPIKey("podbot-secret-codex-openai-X")
	if err != nil {
		t.Fatal(err)
	}
	arch, err := Build(context.Background(), BuildOptions{HostHome: home, CopyCodex: true, Exclude: []string{},
		Overrides: map[string][]byte{CodexAuthName: auth}, Forbidden: []string{fakeKey}})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(arch.Tar, []byte(fakeKey)) {
		t.Fatal("the real key is in the archive")
	}
	h := tarFiles(t, arch.Tar)[CodexAuthName]
	if h == nil || h.Mode != 0o640 || h.Size != int64(len(auth)) {
		t.Fatalf("auth.json entry: %+v", h)
	}
}

func TestBuildForbiddenRefusedNamingFile(t *testing.T) {
	home := t.TempDir()
	writeCodex(t, home, CodexAuthFile, `{"OPENAI_API_KEY":"podbot-secret-x"}`, 0o600)
	writeCodex(t, home, "history.jsonl", `{"text":"export OPENAI_API_KEY=`+fakeKey+`"}`, 0o600)
	_, err := Build(context.Background(), BuildOptions{HostHome: home, CopyCodex: true, Exclude: []string{}, Forbidden: []string{fakeKey}})
	var fe *errdefs.FilesystemError
	if !errors.As(err, &fe) || !strings.HasSuffix(fe.Path, filepath.Join(CodexDir, "history.jsonl")) {
		t.Fatalf("want a refusal naming history.jsonl, got %v", err)
	}
	if strings.Contains(err.Error(), fakeKey) {
		t.Fatal("the error holds the key")
	}
}

func TestBuildOverrideOnSymlinkRefused(t *testing.T) {
	home := t.TempDir()
	writeCodex(t, home, "real.json", `{}`, 0o600)
	if err := os.Symlink("real.json", filepath.Join(home, CodexDir, CodexAuthFile)); err != nil {
		t.Fatal(err)
	}
	_, err := Build(context.Background(), BuildOptions{HostHome: home, CopyCodex: true, Exclude: []string{},
		Overrides: map[string][]byte{CodexAuthName: []byte(`{}`)}})
	if err == nil {
		t.Fatal("an override on a symlink was archived")
	}
}

func FuzzParseCodexAuth(f *testing.F) {
	for _, s := range []string{authWithKey, `{}`, `{"OPENAI_API_KEY":null}`, `[]`, `{"OPENAI_API_KEY":1}`, `{"tokens":{}}`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ParseCodexAuth("auth.json", data)
		if err != nil {
			return
		}
		out, err := a.WithAPIKey("podbot-secret-codex-openai-P")
		if err != nil {
			return
		}
		b, err := ParseCodexAuth("auth.json", out)
		if err != nil || b.APIKey != "podbot-secret-codex-openai-P" || b.HasTokens != a.HasTokens {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func TestExcluded(t *testing.T) {
	for _, c := range []struct {
		pats []string
		want bool
	}{{nil, false}, {[]string{".codex"}, true}, {[]string{".codex/auth.json"}, true}, {[]string{"auth.json"}, true}, {[]string{"*.log"}, false}} {
		got, err := Excluded(c.pats, CodexAuthName)
		if err != nil || got != c.want {
			t.Errorf("%v: %v %v", c.pats, got, err)
		}
	}
	if _, err := Excluded([]string{"["}, CodexAuthName); err == nil {
		t.Error("a bad pattern was accepted")
	}
}
