package creds

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

const testSecret = "tok-9f8e7d6c5b4a"

type secretHolder struct {
	Name  string
	Token string
}

type secretValuer struct{}

func (secretValuer) LogValue() slog.Value { return slog.StringValue("valuer " + testSecret) }

type secretStringer struct{}

func (secretStringer) String() string { return "stringer " + testSecret }

type secretText struct{}

func (secretText) MarshalText() ([]byte, error) { return []byte("text " + testSecret), nil }

// numericSecret is a secret that slog would print as a number.
const numericSecret = 918273645546372

func TestRedactingHandlerEveryPath(t *testing.T) {
	handlers := map[string]func(*bytes.Buffer) slog.Handler{
		"json": func(b *bytes.Buffer) slog.Handler {
			return slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})
		},
		"text": func(b *bytes.Buffer) slog.Handler {
			return slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})
		},
	}
	paths := map[string]func(l *slog.Logger){
		"message":     func(l *slog.Logger) { l.Info("starting with " + testSecret) },
		"string attr": func(l *slog.Logger) { l.Info("m", "k", "v="+testSecret) },
		"attr key":    func(l *slog.Logger) { l.Info("m", testSecret, 1) },
		"error attr":  func(l *slog.Logger) { l.Error("m", "err", fmt.Errorf("wrap: %w", errors.New("bad "+testSecret))) },
		"group": func(l *slog.Logger) {
			l.Info("m", slog.Group("g", "inner", testSecret, slog.Group("deep", "x", testSecret)))
		},
		"group name":     func(l *slog.Logger) { l.Info("m", slog.Group(testSecret, "a", 1)) },
		"With":           func(l *slog.Logger) { l.With("k", testSecret).Info("m") },
		"WithGroup":      func(l *slog.Logger) { l.WithGroup("grp").Info("m", "k", testSecret) },
		"WithGroup name": func(l *slog.Logger) { l.WithGroup(testSecret).Info("m", "k", 1) },
		"With then Group": func(l *slog.Logger) {
			l.With("a", testSecret).WithGroup("g").With("b", testSecret).Info("m", "c", testSecret)
		},
		"struct":         func(l *slog.Logger) { l.Info("m", "h", secretHolder{Name: "n", Token: testSecret}) },
		"pointer struct": func(l *slog.Logger) { l.Info("m", "h", &secretHolder{Token: testSecret}) },
		"map":            func(l *slog.Logger) { l.Info("m", "h", map[string]string{"t": testSecret}) },
		"slice":          func(l *slog.Logger) { l.Info("m", "h", []string{testSecret}) },
		"bytes":          func(l *slog.Logger) { l.Info("m", "h", []byte(testSecret)) },
		"LogValuer":      func(l *slog.Logger) { l.Info("m", "h", secretValuer{}) },
		"Stringer":       func(l *slog.Logger) { l.Info("m", "h", secretStringer{}) },
		"TextMarshaler":  func(l *slog.Logger) { l.Info("m", "h", secretText{}) },
		"Attrs": func(l *slog.Logger) {
			l.LogAttrs(context.Background(), slog.LevelWarn, "m", slog.String("s", testSecret))
		},
		"debug level":  func(l *slog.Logger) { l.Debug(testSecret) },
		"int":          func(l *slog.Logger) { l.Info("m", "n", int64(numericSecret)) },
		"uint":         func(l *slog.Logger) { l.Info("m", "n", uint64(numericSecret)) },
		"float":        func(l *slog.Logger) { l.Info("m", "n", float64(numericSecret)) },
		"duration":     func(l *slog.Logger) { l.Info("m", "d", time.Duration(numericSecret)) },
		"any in group": func(l *slog.Logger) { l.Info("m", slog.Group("g", "h", secretHolder{Token: testSecret})) },
	}
	for hname, mk := range handlers {
		for pname, logIt := range paths {
			t.Run(hname+"/"+pname, func(t *testing.T) {
				var buf bytes.Buffer
				r := NewRedactor(testSecret, fmt.Sprint(numericSecret))
				logIt(slog.New(NewRedactingHandler(mk(&buf), r)))
				out := buf.String()
				if out == "" {
					t.Fatal("nothing was logged")
				}
				if strings.Contains(out, testSecret) || strings.Contains(out, fmt.Sprint(numericSecret)) || strings.Contains(out, "9.18273645546372e+14") {
					t.Fatalf("secret leaked: %s", out)
				}
				if !strings.Contains(out, Mask) {
					t.Fatalf("no mask in output: %s", out)
				}
			})
		}
	}
}

func TestRedactingHandlerLateSecret(t *testing.T) {
	var buf bytes.Buffer
	r := NewRedactor()
	l := slog.New(NewRedactingHandler(slog.NewTextHandler(&buf, nil), r)).With("early", "late-secret-value").WithGroup("g")
	l.Info("before")
	if !strings.Contains(buf.String(), "late-secret-value") {
		t.Fatal("value masked before it was registered")
	}
	buf.Reset()
	r.Add("late-secret-value")
	l.Info("after", "k", "late-secret-value")
	if strings.Contains(buf.String(), "late-secret-value") {
		t.Fatalf("secret registered after With leaked: %s", buf.String())
	}
}

func TestRedactingHandlerKeepsStructure(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(NewRedactingHandler(slog.NewJSONHandler(&buf, nil), NewRedactor(testSecret)))
	l.WithGroup("g").Info("plain", "n", 42, "ok", true, "h", secretHolder{Name: "bob"})
	want := `"msg":"plain","g":{"n":42,"ok":true,"h":{"Name":"bob","Token":""}}`
	if !strings.Contains(buf.String(), want) {
		t.Errorf("record without secrets changed: %s", buf.String())
	}
	h := NewRedactingHandler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}), nil)
	if h.Enabled(context.Background(), slog.LevelInfo) || !h.Enabled(context.Background(), slog.LevelWarn) {
		t.Error("Enabled must defer to the inner handler")
	}
	if h.WithGroup("") != h || h.WithAttrs(nil) != h {
		t.Error("empty With calls should return the same handler")
	}
}
