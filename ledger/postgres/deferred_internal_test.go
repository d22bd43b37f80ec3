package postgres

import "testing"

func TestTargetTable(t *testing.T) {
	for q, want := range map[string]string{
		"INSERT INTO runs (id) VALUES (?)":             "runs",
		"  insert\tinto\n lifecycle_events (run_id)":   "lifecycle_events",
		"UPDATE mutations SET status = ? WHERE id = ?": "mutations",
		"update\nevents SET status = ?":                "events",
		"SELECT 1 FROM mutations":                      "SELECT 1 FROM mutations",
		"INSERT INTO":                                  "INSERT INTO",
		"UPDATE":                                       "UPDATE",
		"":                                             "",
	} {
		if got := targetTable(q); got != want {
			t.Errorf("targetTable(%q) = %q, want %q", q, got, want)
		}
	}
}

func TestRenumber(t *testing.T) {
	n := 0
	b := renumber(nil, "UPDATE runs SET a = ?, b = ? WHERE id = ?", &n)
	b = renumber(append(b, "; "...), "SELECT 1", &n)
	b = renumber(append(b, "; "...), "INSERT INTO x VALUES (?), (?)", &n)
	want := "UPDATE runs SET a = $1, b = $2 WHERE id = $3; SELECT 1; INSERT INTO x VALUES ($4), ($5)"
	if string(b) != want || n != 5 {
		t.Errorf("renumber = %q (n %d), want %q (n 5)", b, n, want)
	}
	if got := rebind("SELECT ? , é ?"); got != "SELECT $1 , é $2" {
		t.Errorf("rebind = %q", got)
	}
}
