package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cliWithin runs the CLI in-process for at most d, so that a command expected to be
// refused at start but that serves instead ends, and returns its exit code and
// stderr.
func cliWithin(t *testing.T, d time.Duration, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out, errOut bytes.Buffer
	code := execute(ctx, args, strings.NewReader(""), &out, &errOut)
	return code, errOut.String()
}

// TestServeTokenFile: serve creates its token file 0600 on a fresh start and reuses
// it; it refuses, without reading through it or changing what it points at, a token
// file anyone but this user could have planted or can read.
func TestServeTokenFile(t *testing.T) {
	const planted = "planted-token-0123456789abcdef\n"
	tests := []struct {
		name string
		// plant puts something at the token path and returns the file whose content
		// must not change ("" for none).
		plant func(t *testing.T, token, elsewhere string) string
		want  string
	}{
		{"a symbolic link to a file the attacker reads", func(t *testing.T, token, elsewhere string) string {
			target := putFile(t, filepath.Join(elsewhere, "readable"), planted)
			if err := os.Symlink(target, token); err != nil {
				t.Fatal(err)
			}
			return target
		}, "is a symbolic link"},
		{"a dangling symbolic link", func(t *testing.T, token, elsewhere string) string {
			if err := os.Symlink(filepath.Join(elsewhere, "created-by-serve"), token); err != nil {
				t.Fatal(err)
			}
			return ""
		}, "is a symbolic link"},
		{"a file others can read", func(t *testing.T, token, _ string) string {
			putFile(t, token, planted)
			if err := os.Chmod(token, 0o644); err != nil {
				t.Fatal(err)
			}
			return token
		}, "has mode 0644"},
		{"a file its group can write", func(t *testing.T, token, _ string) string {
			putFile(t, token, planted)
			if err := os.Chmod(token, 0o620); err != nil {
				t.Fatal(err)
			}
			return token
		}, "has mode 0620"},
		{"a directory", func(t *testing.T, token, _ string) string {
			if err := os.Mkdir(token, 0o700); err != nil {
				t.Fatal(err)
			}
			return ""
		}, "is not a regular file"},
		{"a file another user owns", func(t *testing.T, token, _ string) string {
			if os.Getuid() != 0 {
				t.Skip("needs root to give a file to another user")
			}
			putFile(t, token, planted)
			if err := os.Chmod(token, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(token, 4242, 4242); err != nil {
				t.Fatal(err)
			}
			return token
		}, "belongs to user 4242"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, elsewhere := t.TempDir(), t.TempDir()
			t.Setenv(serveTokenEnv, "")
			db := filepath.Join(dir, "ledger.db")
			watched := tt.plant(t, db+".token", elsewhere)
			var before []byte
			if watched != "" {
				before, _ = os.ReadFile(watched)
			}
			code, stderr := cliWithin(t, 30*time.Second, "--db", db, "serve", "--listen", "127.0.0.1:0")
			if code == 0 || !strings.Contains(stderr, db+".token") || !strings.Contains(stderr, tt.want) {
				t.Fatalf("got exit %d %q, want a refusal naming the token file and saying it %s", code, stderr, tt.want)
			}
			if strings.Contains(stderr, strings.TrimSpace(planted)) {
				t.Errorf("the refusal shows the planted token: %q", stderr)
			}
			if watched != "" {
				if after, _ := os.ReadFile(watched); string(after) != string(before) {
					t.Errorf("%s: got %q, want it unchanged", watched, after)
				}
			}
			if _, err := os.Lstat(filepath.Join(elsewhere, "created-by-serve")); err == nil {
				t.Error("serve created the dangling link's target")
			}
			if _, err := os.Stat(db); err == nil {
				t.Error("the ledger was created by a refused start")
			}
		})
	}

	t.Run("a fresh start", func(t *testing.T) {
		t.Setenv(serveTokenEnv, "")
		db := filepath.Join(t.TempDir(), "ledger.db")
		s := startServe(t, db)
		s.close()
		fi, err := os.Lstat(db + ".token")
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
			t.Fatalf("token file: got %v %v, want a regular file with mode 0600", fi, err)
		}
		token, _ := os.ReadFile(db + ".token")
		if !strings.Contains(s.stderr.String(), strings.TrimSpace(string(token))) {
			t.Errorf("serve did not print the token it saved")
		}
		// The next start uses the same token.
		again := startServe(t, db)
		if code, _ := again.call("GET", "/api/v1/runs", strings.TrimSpace(string(token)), nil); code != 200 {
			t.Errorf("with the saved token: got %d, want 200", code)
		}
	})

	t.Run("a directory others can write", func(t *testing.T) {
		t.Setenv(serveTokenEnv, "")
		dir := filepath.Join(t.TempDir(), "shared")
		if err := os.Mkdir(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		code, stderr := cliWithin(t, 30*time.Second, "--db", filepath.Join(dir, "ledger.db"), "serve", "--listen", "127.0.0.1:0")
		if code == 0 || !strings.Contains(stderr, "has mode 0777") {
			t.Fatalf("got exit %d %q, want the directory refused", code, stderr)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("got %d files in the directory, want none", len(entries))
		}
	})
}

// TestServeConnectionLimits: serve applies --idle-timeout and --max-connections to
// real connections on loopback.
func TestServeConnectionLimits(t *testing.T) {
	s := startServe(t, filepath.Join(t.TempDir(), "ledger.db"), "--token", testServeToken,
		"--idle-timeout", "200ms", "--max-connections", "1")
	addr := strings.TrimPrefix(s.base, "http://")
	first, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	r := bufio.NewReader(first)
	request := "GET /api/v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + testServeToken + "\r\n\r\n"
	io.WriteString(first, request)
	if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, "200") {
		t.Fatalf("first request: got %q %v, want 200", line, err)
	}
	// A second connection waits while the first is open.
	second, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	io.WriteString(second, request)
	r2 := bufio.NewReader(second)
	second.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := r2.ReadByte(); err == nil {
		t.Fatal("a second connection was served beyond --max-connections 1")
	}
	// The idle first connection is closed, which lets the second in.
	first.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, r); err != nil {
		t.Fatalf("the idle connection: %v, want it closed by the server within 10s", err)
	}
	second.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := r2.ReadString('\n'); err != nil || !strings.Contains(line, "200") {
		t.Fatalf("second request after the first closed: got %q %v, want 200", line, err)
	}
}
