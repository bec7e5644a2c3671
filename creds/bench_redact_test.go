package creds

import (
	"strings"
	"testing"
)

func benchRedactor() *Redactor {
	return NewRedactor("ghs_16C7e42F292c6912E7710c838347Ae178B4a", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789", "hunter2-password", "AKIAIOSFODNN7EXAMPLE")
}

var benchLine = strings.Repeat("2024-01-02T03:04:05Z info agent: compiling package github.com/example/thing (go build) ", 12)

func BenchmarkRedactNoSecret(b *testing.B) {
	r := benchRedactor()
	b.SetBytes(int64(len(benchLine)))
	for b.Loop() {
		_ = r.Redact(benchLine)
	}
}

func BenchmarkRedactWithSecret(b *testing.B) {
	r := benchRedactor()
	s := benchLine + " token ghs_16C7e42F292c6912E7710c838347Ae178B4a " + benchLine
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		_ = r.Redact(s)
	}
}
