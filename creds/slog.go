package creds

import (
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
)

// RedactingHandler is a slog.Handler that masks every secret known to a
// Redactor before a record reaches the inner handler: in the message, in
// attribute keys and values of every kind (strings, numbers, times, errors,
// byte slices, structs, LogValuers), in groups, and in attributes and group
// names added with WithAttrs and WithGroup. Secrets registered after a
// logger was derived are masked in its later records too.
type RedactingHandler struct {
	inner slog.Handler
	r     *Redactor
	ops   []handlerOp
	cache *atomic.Pointer[derivedHandler]
}

// handlerOp is one WithGroup (group != "") or WithAttrs call, replayed on
// the inner handler with the current secrets.
type handlerOp struct {
	group string
	attrs []slog.Attr
}

type derivedHandler struct {
	gen uint64
	h   slog.Handler
}

// NewRedactingHandler wraps inner so that no value known to r reaches it.
func NewRedactingHandler(inner slog.Handler, r *Redactor) *RedactingHandler {
	return &RedactingHandler{inner: inner, r: r, cache: &atomic.Pointer[derivedHandler]{}}
}

// Enabled defers to the inner handler.
func (h *RedactingHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

// Handle masks the record and passes it on.
func (h *RedactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.Redact(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.redactAttr(a))
		return true
	})
	return h.derived().Handle(ctx, out)
}

// WithAttrs returns a handler that adds attrs to every record.
func (h *RedactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	return h.with(handlerOp{attrs: slices.Clone(attrs)})
}

// WithGroup returns a handler that nests later attributes in a group.
func (h *RedactingHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.with(handlerOp{group: name})
}

func (h *RedactingHandler) with(op handlerOp) *RedactingHandler {
	ops := make([]handlerOp, len(h.ops), len(h.ops)+1)
	copy(ops, h.ops)
	return &RedactingHandler{inner: h.inner, r: h.r, ops: append(ops, op), cache: &atomic.Pointer[derivedHandler]{}}
}

// derived returns the inner handler with every With call replayed, masked
// with the current secrets; it is rebuilt when the secrets change.
func (h *RedactingHandler) derived() slog.Handler {
	if len(h.ops) == 0 {
		return h.inner
	}
	gen := h.r.generation()
	if d := h.cache.Load(); d != nil && d.gen == gen {
		return d.h
	}
	hh := h.inner
	for _, op := range h.ops {
		if op.group != "" {
			hh = hh.WithGroup(h.r.Redact(op.group))
			continue
		}
		attrs := make([]slog.Attr, len(op.attrs))
		for i, a := range op.attrs {
			attrs[i] = h.redactAttr(a)
		}
		hh = hh.WithAttrs(attrs)
	}
	h.cache.Store(&derivedHandler{gen: gen, h: hh})
	return hh
}

func (h *RedactingHandler) redactAttr(a slog.Attr) slog.Attr {
	a.Key = h.r.Redact(a.Key)
	a.Value = h.redactValue(a.Value.Resolve())
	return a
}

func (h *RedactingHandler) redactValue(v slog.Value) slog.Value {
	switch v.Kind() {
	case slog.KindString:
		return slog.StringValue(h.r.Redact(v.String()))
	case slog.KindGroup:
		group := v.Group()
		out := make([]slog.Attr, len(group))
		for i, a := range group {
			out[i] = h.redactAttr(a)
		}
		return slog.GroupValue(out...)
	case slog.KindAny:
		return h.redactAny(v)
	default:
		// Numbers, bools, durations and times: mask only if one of the
		// text forms a handler may print holds a secret.
		return h.maskIfLeaks(v, scalarRenderings(v))
	}
}

// maskIfLeaks replaces v by the masked form of the first rendering that
// holds a secret, and keeps v when none does.
func (h *RedactingHandler) maskIfLeaks(v slog.Value, renderings []string) slog.Value {
	for _, r := range renderings {
		if masked := h.r.Redact(r); masked != r {
			return slog.StringValue(masked)
		}
	}
	return v
}

// scalarRenderings lists the ways slog's text and JSON handlers print a
// non-string scalar.
func scalarRenderings(v slog.Value) []string {
	out := []string{v.String()}
	switch v.Kind() {
	case slog.KindFloat64:
		f := v.Float64()
		out = append(out, strconv.FormatFloat(f, 'f', -1, 64), strconv.FormatFloat(f, 'e', -1, 64))
	case slog.KindDuration:
		out = append(out, strconv.FormatInt(int64(v.Duration()), 10))
	case slog.KindTime:
		t := v.Time()
		out = append(out, t.Format(time.RFC3339Nano), t.Format("2006-01-02T15:04:05.000Z07:00"))
	}
	return out
}

// redactAny masks arbitrary values. Handlers render them in several ways
// (Error, MarshalText, JSON, %+v), so each rendering is checked and any
// value whose rendering holds a secret is replaced by its masked text.
func (h *RedactingHandler) redactAny(v slog.Value) slog.Value {
	switch x := v.Any().(type) {
	case error:
		return slog.StringValue(h.r.Redact(x.Error()))
	case []byte:
		return h.maskIfLeaks(v, []string{string(x)})
	}
	if h.r.Len() == 0 {
		return v
	}
	renderings := []string{fmt.Sprintf("%+v", v.Any()), fmt.Sprintf("%v", v.Any())}
	if tm, ok := v.Any().(encoding.TextMarshaler); ok {
		if b, err := tm.MarshalText(); err == nil {
			renderings = append(renderings, string(b))
		}
	}
	if b, err := json.Marshal(v.Any()); err == nil {
		renderings = append(renderings, string(b))
	}
	return h.maskIfLeaks(v, renderings)
}
