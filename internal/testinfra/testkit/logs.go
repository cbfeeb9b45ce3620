package testkit

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// LogRecord is one line a Logs handler was given: its level, message and
// attributes by key (values resolved, groups flattened with a dot).
type LogRecord struct {
	Level slog.Level
	Msg   string
	Attrs map[string]any
}

// Logs is a slog.Handler that records every line at every level, for a
// test to check a client's log lines against the logging conventions
// (docs/observability.md, "Logging").
type Logs struct {
	st    *logState
	attrs []slog.Attr
	group string
}

type logState struct {
	mu   sync.Mutex
	recs []LogRecord
}

// NewLogs returns an empty recorder.
func NewLogs() *Logs { return &Logs{st: &logState{}} }

// Logger returns a logger that writes to l.
func (l *Logs) Logger() *slog.Logger { return slog.New(l) }

func (l *Logs) Enabled(context.Context, slog.Level) bool { return true }

func (l *Logs) WithAttrs(as []slog.Attr) slog.Handler {
	attrs := append([]slog.Attr(nil), l.attrs...)
	for _, a := range as {
		attrs = append(attrs, slog.Attr{Key: l.group + a.Key, Value: a.Value})
	}
	return &Logs{st: l.st, attrs: attrs, group: l.group}
}

func (l *Logs) WithGroup(name string) slog.Handler {
	return &Logs{st: l.st, attrs: l.attrs, group: l.group + name + "."}
}

func (l *Logs) Handle(_ context.Context, r slog.Record) error {
	rec := LogRecord{Level: r.Level, Msg: r.Message, Attrs: map[string]any{}}
	for _, a := range l.attrs {
		put(rec.Attrs, "", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		put(rec.Attrs, l.group, a)
		return true
	})
	l.st.mu.Lock()
	l.st.recs = append(l.st.recs, rec)
	l.st.mu.Unlock()
	return nil
}

func put(m map[string]any, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		for _, g := range v.Group() {
			put(m, prefix+a.Key+".", g)
		}
		return
	}
	m[prefix+a.Key] = v.Any()
}

// All returns the lines recorded so far.
func (l *Logs) All() []LogRecord {
	l.st.mu.Lock()
	defer l.st.mu.Unlock()
	return append([]LogRecord(nil), l.st.recs...)
}

// With returns the lines recorded so far whose message is msg.
func (l *Logs) With(msg string) []LogRecord {
	var out []LogRecord
	for _, r := range l.All() {
		if r.Msg == msg {
			out = append(out, r)
		}
	}
	return out
}

// CheckConventions returns an error naming the first line recorded, of
// those whose message begins with one of names and ": ", that breaks the
// conventions every line keeps — a lower case message; no key of the
// banned spellings ("err", "node", "reason"); "session" a "0x" string,
// "token" an int64, "cause" and "error" errors — or the first line whose
// message names an internal package or the library instead of a recipe.
func (l *Logs) CheckConventions(names ...string) error {
	for _, r := range l.All() {
		for _, bad := range []string{"zkrecipes", "lockcore", "connx"} {
			if strings.HasPrefix(r.Msg, bad) {
				return fmt.Errorf("line %q: the message begins with %q", r.Msg, bad)
			}
		}
		name, _, _ := strings.Cut(r.Msg, ": ")
		if !slices.Contains(names, name) {
			continue
		}
		if first := r.Msg[:1]; strings.ToLower(first) != first {
			return fmt.Errorf("line %q: the message is not lower case", r.Msg)
		}
		for _, banned := range []string{"err", "node", "reason"} {
			if _, ok := r.Attrs[banned]; ok {
				return fmt.Errorf("line %q: key %q", r.Msg, banned)
			}
		}
		if v, ok := r.Attrs["session"]; ok {
			if s, ok := v.(string); !ok || !strings.HasPrefix(s, "0x") {
				return fmt.Errorf("line %q: session %v is not a 0x string", r.Msg, v)
			}
		}
		if v, ok := r.Attrs["token"]; ok {
			if _, ok := v.(int64); !ok {
				return fmt.Errorf("line %q: token %v is a %T", r.Msg, v, v)
			}
		}
		for _, k := range []string{"cause", "error"} {
			if v, ok := r.Attrs[k]; ok {
				if _, ok := v.(error); !ok {
					return fmt.Errorf("line %q: %s %v is a %T", r.Msg, k, v, v)
				}
			}
		}
	}
	return nil
}
