package scripthost

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// KeyInput names one logical mutation. See IdempotencyKey.
type KeyInput struct {
	Workflow string
	Handler  string
	// Events are the reserved input events as "topic/message-id".
	Events    []string
	Namespace string
	Method    string
	// Params must be canonical JSON (see CanonicalJSON).
	Params []byte
	// Scope distinguishes mutations that reserve no events: the run id for a consumer
	// woken without events, "plan/<plan>/<execution>/<step>" for a plan step. It is
	// ignored when Events is not empty, so that two runs that somehow reserved the same
	// events collide on the key instead of both applying.
	Scope string
}

// InputHash returns the hash of the logical inputs of a mutation: everything that
// names it except the count of earlier definite failures.
func InputHash(in KeyInput) string {
	h := sha256.New()
	write := func(s string) {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	write("scripthost/v1")
	write(in.Workflow)
	write(in.Handler)
	events := append([]string(nil), in.Events...)
	sort.Strings(events)
	write(strconv.Itoa(len(events)))
	for _, e := range events {
		write(e)
	}
	if len(events) == 0 {
		write(in.Scope)
	}
	write(in.Namespace)
	write(in.Method)
	write(string(in.Params))
	return hex.EncodeToString(h.Sum(nil))
}

// IdempotencyKey derives the key of a mutation from its input hash and the number of
// earlier definite failures of the same inputs. The key is the same for every attempt
// while the outcome is unknown (the failure count does not change), and changes once a
// failure is known, because a service may keep answering a used key with its stored
// failure.
func IdempotencyKey(inputHash string, priorFailures int) string {
	sum := sha256.Sum256([]byte(inputHash + "/" + strconv.Itoa(priorFailures)))
	return "sh_" + hex.EncodeToString(sum[:16])
}

// CanonicalJSON re-encodes a JSON document with object keys sorted and no insignificant
// white space, so that equal values give equal bytes. Numbers keep their literal form.
func CanonicalJSON(raw []byte) ([]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return []byte("null"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("scripthost: canonical json: %w", err)
	}
	// dec.More is false before a stray '}' or ']': only the end of input will do.
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("scripthost: canonical json: trailing data after value")
	}
	return CanonicalValue(v)
}

// CanonicalValue is CanonicalJSON of a value already decoded as encoding/json decodes
// with UseNumber (maps, slices, strings, json.Number, bools, nil): the same bytes as
// CanonicalJSON of its text, without decoding it again.
func CanonicalValue(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeCanonical(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeCanonical(buf *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			kb, err := json.Marshal(k)
			if err != nil {
				return err
			}
			buf.Write(kb)
			buf.WriteByte(':')
			if err := writeCanonical(buf, t[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	default:
		b, err := json.Marshal(t)
		if err != nil {
			return fmt.Errorf("scripthost: canonical json: %w", err)
		}
		buf.Write(b)
	}
	return nil
}
