package agent

import (
	"fmt"
	"strings"
)

// EstimateTokens guesses the tokens of a text before it is sent: about four bytes a
// token, the usual ratio for English and code with BPE tokenizers, plus a small
// per-message overhead. The server's usage answer replaces the guess afterwards.
func EstimateTokens(msgs []Message, tools []ToolDef) int {
	n := 0
	for _, m := range msgs {
		n += 4 + (len(m.Content)+3)/4
		for _, c := range m.ToolCalls {
			n += 4 + (len(c.Name)+len(c.Arguments)+3)/4
		}
	}
	for _, t := range tools {
		n += 4 + (len(t.Name)+len(t.Description)+len(t.Parameters)+3)/4
	}
	return n
}

// trimmedNote replaces a tool result removed to fit the context budget.
const trimmedNote = "[tool result removed to stay within the context budget; call the tool again if you need it]"

// trim shortens msgs to fit budget tokens by replacing tool results, oldest first,
// with a note. The system prompt, the task and step message and the newest message
// are never touched. It returns the messages, how many results it removed and the
// estimate after.
func trim(msgs []Message, tools []ToolDef, budget int) ([]Message, int, int) {
	est := EstimateTokens(msgs, tools)
	if budget <= 0 || est <= budget {
		return msgs, 0, est
	}
	out := append([]Message(nil), msgs...)
	removed := 0
	for i := 2; i < len(out)-1 && est > budget; i++ {
		if out[i].Role != "tool" || out[i].Content == trimmedNote {
			continue
		}
		out[i].Content = trimmedNote
		removed++
		est = EstimateTokens(out, tools)
	}
	return out, removed, est
}

const systemPrompt = `You carry out one step of a task in a software workspace, using the tools given.
Work only inside the workspace. When the step is done and its criteria are met, call complete_step with a short summary.
Tool results are JSON. An error result explains what went wrong; correct the call rather than repeating it.`

// stepPrompt is the user message that opens a step: the goal, the step, its criteria
// and the files it names.
func stepPrompt(t *Task, s Step, files map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Task goal: %s\n\nCurrent step %s: %s\n", t.Goal, s.ID, s.Title)
	if s.Description != "" {
		fmt.Fprintf(&b, "\n%s\n", s.Description)
	}
	if s.Criteria != "" {
		fmt.Fprintf(&b, "\nCompletion criteria: %s\n", s.Criteria)
	}
	if s.Action != "" {
		fmt.Fprintf(&b, "\nExpected action: %s\n", s.Action)
	}
	if len(s.Produces) > 0 {
		fmt.Fprintf(&b, "\nFiles this step must produce: %s\n", strings.Join(s.Produces, ", "))
	}
	if s.Check != nil {
		fmt.Fprintf(&b, "\nCheck that must pass: %s %s\n", s.Check.Program, strings.Join(s.Check.Args, " "))
	}
	for _, f := range s.Files {
		fmt.Fprintf(&b, "\n--- %s ---\n%s\n", f, files[f])
	}
	return b.String()
}
