package podbot

import (
	"os"
	"strings"
	"testing"

	"github.com/podbot/podbot/config"
)

// TestReadmeDocumentsEveryKey keeps the README's configuration reference
// current: every key and its environment variable must appear in it.
func TestReadmeDocumentsEveryKey(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, k := range config.Keys() {
		row := "| `" + k.Key + "` | `" + k.Env + "` |"
		if !strings.Contains(readme, row) {
			t.Errorf("README lacks the row for %s (%s)", k.Key, k.Env)
		}
	}
}
