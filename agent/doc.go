// Package agent owns agent tasks: a goal and a list of steps (ParseTask, the YAML or
// JSON of TaskSchema) that a language model carries out one step at a time by calling
// host tools, and the Executor that runs them as durable sessions.
//
// For each step the Executor sends the conversation to a model server (a Driver;
// NewOpenAI speaks the chat-completions API of Ollama, llama.cpp and others), runs the
// tool calls the model asks for through the tool registry under the names of its
// Bindings (DefaultBindings: the workspace, command and code tools), and carries on
// until the model calls complete_step and the step's check passes, or a limit of turns,
// tokens or bytes is reached.
//
// Every model turn and every tool call is stored in the ledger (ledger.AgentStore) as
// it happens. A mutating call (a file write, edit or delete, a command that is not
// read-only) goes through the same effect path as a workflow mutation
// (hostfuncs.Effect): recorded in flight with its idempotency key before the tool runs,
// its outcome after, under the workflow "agent/SESSION" (Workflow). Approvals decide
// per class of call whether it runs, asks a person (Prompter) or is refused; without a
// person the session pauses and Decide records the answer. Resume continues a
// session after a crash or a decision without sending a finished turn again and
// without applying a tool call twice. Settings fixed at the start (workspace, model,
// programs, approvals) are stored with the session, and a resume may narrow them only.
//
// The user's guide is docs/agent.md.
package agent
