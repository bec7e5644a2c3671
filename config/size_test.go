package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	cases := []struct {
		in      string
		want    ByteSize
		wantErr bool
	}{
		{"0", 0, false},
		{"100", 100, false},
		{"100b", 100, false},
		{"512m", 512 * MiB, false},
		{"4g", 4 * GiB, false},
		{"4G", 4 * GiB, false},
		{"1GiB", GiB, false},
		{"64 kb", 64 * KiB, false},
		{"2t", 2 * TiB, false},
		{"", 0, true},
		{"g", 0, true},
		{"-1g", 0, true},
		{"1.5g", 0, true},
		{"4x", 0, true},
		{"9999999999999t", 0, true},
		{"99999999999999999999", 0, true},
		{strings.Repeat("1", 100), 0, true},
	}
	for _, tc := range cases {
		got, err := ParseSize(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseSize(%q) = %v, %v; want %v, err %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestByteSizeString(t *testing.T) {
	cases := map[ByteSize]string{0: "0", 100: "100", 1536 * KiB: "1536k", 4 * GiB: "4g", 32 * MiB: "32m", TiB: "1t"}
	for in, want := range cases {
		if got := in.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int64(in), got, want)
		}
	}
}

func TestParseBool(t *testing.T) {
	for in, want := range map[string]bool{"true": true, "FALSE": false, " True ": true} {
		if got, err := ParseBool(in); err != nil || got != want {
			t.Errorf("ParseBool(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"maybe", "1", "0", "yes", "t", ""} {
		if _, err := ParseBool(in); err == nil {
			t.Errorf("ParseBool(%q) accepted", in)
		}
	}
}

func TestParseTextDuration(t *testing.T) {
	if v, err := parseText(TypeDuration, "1h30m"); err != nil || v != 90*time.Minute {
		t.Errorf("1h30m = %v, %v", v, err)
	}
	if _, err := parseText(TypeDuration, "-1s"); err == nil {
		t.Error("negative duration accepted")
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"0", "512m", "4g", "1GiB", "64 kb", "-1", "9999999999999t", "1.5g"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseSize(s)
		if err != nil {
			return
		}
		if b < 0 {
			t.Fatalf("ParseSize(%q) = %d, negative", s, b)
		}
		back, err := ParseSize(b.String())
		if err != nil || back != b {
			t.Fatalf("round trip of %q: %d -> %q -> %d, %v", s, b, b.String(), back, err)
		}
	})
}

func FuzzParseList(f *testing.F) {
	for _, s := range []string{"a,b", " a , ,b,", ",", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l := ParseList(s)
		for _, item := range l {
			if item == "" || item != strings.TrimSpace(item) || strings.Contains(item, ",") {
				t.Fatalf("ParseList(%q) has bad item %q", s, item)
			}
		}
		if again := ParseList(strings.Join(l, ",")); len(again) != len(l) {
			t.Fatalf("ParseList not stable for %q: %q vs %q", s, l, again)
		}
	})
}
