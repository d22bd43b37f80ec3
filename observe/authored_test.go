package observe

import "testing"

// TestAuthoredKeepsWorkUntilAPollAfterIt: a run worked on is this host's while the
// work goes on and until a poll of the log that began after the work ended has read
// what it wrote; a poll that began during the work does not forget it, and a key never
// worked on is not this host's.
func TestAuthoredKeepsWorkUntilAPollAfterIt(t *testing.T) {
	var a authored
	end := a.begin("run-1")
	if !a.mine("run-1") || a.mine("run-2") || a.mine("") {
		t.Fatal("during the work: want run-1 only")
	}
	during := a.pollBegins()
	end()
	a.pollEnded(during)
	if !a.mine("run-1") {
		t.Fatal("a poll begun during the work forgot it: its events may come after that poll")
	}
	after := a.pollBegins()
	if !a.mine("", "run-1") {
		t.Fatal("during the poll after the work: want run-1")
	}
	a.pollEnded(after)
	if a.mine("run-1") {
		t.Fatal("after a poll begun after the work ended: want run-1 forgotten")
	}
	// Two drives of one run: the key stays while either goes on.
	end1, end2 := a.begin("run-3"), a.begin("run-3")
	end1()
	n := a.pollBegins()
	a.pollEnded(n)
	if !a.mine("run-3") {
		t.Fatal("one of two drives ended: want run-3 kept")
	}
	end2()
	n = a.pollBegins()
	a.pollEnded(n)
	if a.mine("run-3") {
		t.Fatal("both drives ended and a poll after: want run-3 forgotten")
	}
}
