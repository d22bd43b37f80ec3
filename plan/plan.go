package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/document"
)

// Plan is a list of tool steps to run in order.
type Plan struct {
	PlanID string `json:"plan_id"`
	Intent string `json:"intent"`
	Steps  []Step `json:"steps"`

	// hash is the hash of the parsed document, which Hash returns while the plan still
	// encodes as enc did when it was parsed: a plan changed in code after Parse has the
	// hash of what it is now, so that no approval of the document covers it.
	hash string
	enc  []byte
}

// Step is one tool call of a plan.
type Step struct {
	StepID      string `json:"step_id"`
	Description string `json:"description,omitempty"`
	// Tool is a registered tool: a bare name (file_read) is looked up in the "plan"
	// namespace, a dotted one (Files.read) as written.
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// DependsOn names earlier steps that must have succeeded.
	DependsOn            []string      `json:"depends_on,omitempty"`
	Precondition         *Precondition `json:"precondition,omitempty"`
	RequiresConfirmation bool          `json:"requires_confirmation,omitempty"`
	// Retry asks for more attempts after a failure, with exponential backoff.
	Retry *Retry `json:"retry,omitempty"`
	// TimeoutMS bounds the step's tool call; 0 means the tool's own limits.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// ContinueOnFailure lets later steps run after this one fails; steps that depend
	// on it are blocked.
	ContinueOnFailure bool `json:"continue_on_failure,omitempty"`
}

// Precondition lists checks made before the tool is called; every one given must hold.
type Precondition struct {
	FileExists       string       `json:"file_exists,omitempty"`
	DirExists        string       `json:"dir_exists,omitempty"`
	PathAbsent       string       `json:"path_absent,omitempty"`
	CommandAvailable string       `json:"command_available,omitempty"`
	FileMatches      *FileMatches `json:"file_matches,omitempty"`
	// ProjectExists is a directory holding a go.mod, Cargo.toml or package.json, or
	// the path of one of those files.
	ProjectExists string `json:"project_exists,omitempty"`
	// CodegraphExists asks for the code index (codegraph.db) to have been built.
	CodegraphExists bool `json:"codegraph_exists,omitempty"`
	// SymbolExists asks for a definition in the code index.
	SymbolExists *SymbolExists `json:"symbol_exists,omitempty"`
}

// SymbolExists holds when Symbol (a name or Type.name) is defined: in File when it
// is given, anywhere in the workspace otherwise.
type SymbolExists struct {
	File   string `json:"file,omitempty"`
	Symbol string `json:"symbol"`
}

// FileMatches holds when a line of file Path matches the regular expression Pattern.
type FileMatches struct {
	Path    string `json:"path"`
	Pattern string `json:"pattern"`
}

// Retry is a step's retry policy: up to MaxAttempts calls in all, waiting
// InitialBackoffMS before the second, multiplied by Multiplier (default 2) before each
// next one, capped at MaxBackoffMS (default 60000).
type Retry struct {
	MaxAttempts      int     `json:"max_attempts"`
	InitialBackoffMS int64   `json:"initial_backoff_ms,omitempty"`
	MaxBackoffMS     int64   `json:"max_backoff_ms,omitempty"`
	Multiplier       float64 `json:"multiplier,omitempty"`
}

// Backoff returns the wait before attempt n+1 after n failed attempts (n ≥ 1).
func (r *Retry) Backoff(n int) time.Duration {
	d := float64(r.InitialBackoffMS)
	mult := r.Multiplier
	if mult == 0 {
		mult = 2
	}
	maxMS := float64(r.MaxBackoffMS)
	if maxMS == 0 {
		maxMS = 60000
	}
	for i := 1; i < n && d < maxMS; i++ {
		d *= mult
	}
	return time.Duration(min(d, maxMS)) * time.Millisecond
}

// Authorization statuses.
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusDenied   = "denied"
)

// Authorization is a person's decision about one plan, bound to its content by hash.
type Authorization struct {
	PlanID   string    `json:"plan_id"`
	Status   string    `json:"status"`
	By       string    `json:"by"`
	At       time.Time `json:"at"`
	PlanHash string    `json:"plan_hash"`
	Note     string    `json:"note,omitempty"`
}

// Approve returns an approved authorization of p by who at the given time.
func Approve(p *Plan, who string, at time.Time) Authorization {
	return Authorization{PlanID: p.PlanID, Status: StatusApproved, By: who, At: at.UTC(), PlanHash: p.Hash()}
}

var idRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Parse is ParseFile of a document without a name.
func Parse(raw []byte) (*Plan, error) { return ParseFile("", raw) }

// ParseFile decodes and validates the plan document raw; name (which may be empty)
// names it in errors. The document is decoded strictly (internal/document): a key
// twice in an object, a key that is not exactly a field (Steps for steps), a key with
// NUL, text that is not UTF-8, a lone surrogate or anything after the document refuses
// it, with the line and column. The hash is taken over the canonical form of the
// document and the plan is decoded from that canonical form, so that what an approval
// of the hash covers is what runs.
func ParseFile(name string, raw []byte) (*Plan, error) {
	// The first decode finds every refusal, placed in the text as written.
	if err := document.JSON(name, raw, new(Plan)); err != nil {
		return nil, &Error{Code: CodeE001InvalidPlan, Message: err.Error(), Err: err}
	}
	canon, err := scripthost.CanonicalJSON(raw)
	if err != nil {
		return nil, &Error{Code: CodeE001InvalidPlan, Message: "not JSON", Err: err}
	}
	var p Plan
	if err := document.JSON(name, canon, &p); err != nil {
		return nil, &Error{Code: CodeE001InvalidPlan, Message: "canonical form: " + err.Error(), Err: err}
	}
	p.hash = hashOf(canon)
	if p.enc, err = json.Marshal(&p); err != nil {
		return nil, &Error{Code: CodeE001InvalidPlan, Message: err.Error(), Err: err}
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// ParseAuthorization is ParseAuthorizationFile of a record without a name.
func ParseAuthorization(raw []byte) (Authorization, error) {
	return ParseAuthorizationFile("", raw)
}

// ParseAuthorizationFile decodes an authorization record as strictly as ParseFile
// decodes a plan; name (which may be empty) names it in errors.
func ParseAuthorizationFile(name string, raw []byte) (Authorization, error) {
	var a Authorization
	if err := document.JSON(name, raw, &a); err != nil {
		return Authorization{}, &Error{Code: CodeE002NotApproved, Message: "authorization: " + err.Error(), Err: err}
	}
	return a, nil
}

func hashOf(canon []byte) string {
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Hash returns "sha256:" and the hex SHA-256 of the plan's canonical JSON: of the
// document as parsed while the plan is unchanged since, or of the plan encoded when
// it was built or changed in code.
func (p *Plan) Hash() string {
	b, _ := json.Marshal(p)
	if p.hash != "" && bytes.Equal(b, p.enc) {
		return p.hash
	}
	canon, _ := scripthost.CanonicalJSON(b)
	return hashOf(canon)
}

// Step returns the step with the given id.
func (p *Plan) Step(id string) (Step, bool) {
	for _, s := range p.Steps {
		if s.StepID == id {
			return s, true
		}
	}
	return Step{}, false
}

// Validate checks the plan's structure: ids, tools named, arguments objects,
// dependencies on earlier steps only, sane preconditions and retry policies.
func (p *Plan) Validate() error {
	bad := func(step, format string, args ...any) error {
		return errorf(CodeE001InvalidPlan, step, format, args...)
	}
	if !idRE.MatchString(p.PlanID) {
		return bad("", "plan_id %q must be 1-128 letters, digits, '.', '_' or '-'", p.PlanID)
	}
	if len(p.Steps) == 0 {
		return bad("", "a plan needs at least one step")
	}
	seen := map[string]bool{}
	for i, s := range p.Steps {
		if !idRE.MatchString(s.StepID) {
			return bad("", "step %d: step_id %q must be 1-128 letters, digits, '.', '_' or '-'", i+1, s.StepID)
		}
		if seen[s.StepID] {
			return bad(s.StepID, "duplicate step_id")
		}
		if s.Tool == "" {
			return bad(s.StepID, "no tool")
		}
		if a := bytes.TrimSpace(s.Arguments); len(a) > 0 && a[0] != '{' && string(a) != "null" {
			return bad(s.StepID, "arguments must be a JSON object")
		}
		for _, d := range s.DependsOn {
			if d == s.StepID {
				return bad(s.StepID, "depends on itself")
			}
			if !seen[d] {
				return bad(s.StepID, "depends_on %q: not an earlier step", d)
			}
		}
		if pc := s.Precondition; pc != nil {
			if *pc == (Precondition{}) {
				return bad(s.StepID, "empty precondition")
			}
			if se := pc.SymbolExists; se != nil && se.Symbol == "" {
				return bad(s.StepID, "symbol_exists needs a symbol")
			}
			if fm := pc.FileMatches; fm != nil {
				if fm.Path == "" {
					return bad(s.StepID, "file_matches needs a path")
				}
				if _, err := regexp.Compile(fm.Pattern); err != nil {
					return bad(s.StepID, "file_matches pattern: %v", err)
				}
			}
		}
		if r := s.Retry; r != nil {
			if r.MaxAttempts < 1 || r.MaxAttempts > 20 {
				return bad(s.StepID, "retry.max_attempts must be 1-20")
			}
			if r.InitialBackoffMS < 0 || r.MaxBackoffMS < 0 || r.Multiplier < 0 || (r.Multiplier != 0 && r.Multiplier < 1) {
				return bad(s.StepID, "retry backoff must be non-negative and the multiplier at least 1")
			}
		}
		if s.TimeoutMS < 0 {
			return bad(s.StepID, "timeout_ms must not be negative")
		}
		seen[s.StepID] = true
	}
	return nil
}

// args returns the step's arguments, {} when none were given.
func (s Step) args() json.RawMessage {
	if len(bytes.TrimSpace(s.Arguments)) == 0 || string(bytes.TrimSpace(s.Arguments)) == "null" {
		return json.RawMessage(`{}`)
	}
	return s.Arguments
}
