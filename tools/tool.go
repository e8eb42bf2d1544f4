package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/jail-sandbox/jail/policy"
)

// Tool is one tool: its declaration for models and the policy, and the
// function the worker runs. The zero Timeout and OutputCap mean the
// registry's defaults.
type Tool struct {
	// Name is the name callers use; it must be in policy.Catalogue.
	Name string
	// Description goes into a model's context on every call: short and exact.
	Description string
	// Schema is the JSON Schema (draft 2020-12) of the arguments.
	Schema string
	// Risk and Capabilities are the tool's own declaration; the policy
	// takes the stricter of it and its static map.
	Risk         policy.Risk
	Capabilities []string
	// Timeout bounds one call; bash takes a per-call value under it.
	Timeout time.Duration
	// OutputCap is the number of characters of content kept; the rest is
	// cut with the marker "... [N chars truncated]".
	OutputCap int

	// Resources are named documents a caller can fetch with
	// load_tool_resource (examples, longer notes); "schema" and
	// "description" always exist.
	Resources map[string]string

	// Ready reports, in the supervisor, whether the tool can run on this
	// machine, and why not (a program it needs is missing, Docker or an
	// image is absent). Nil means always ready. Front ends leave unready
	// tools out of their lists and refuse calls to them with the reason.
	Ready func() error

	// Host, when set, runs the call in the supervisor instead of a worker.
	// It is for tools that open no path a caller named and run no code on
	// the host: bash_output and bash_kill act on the server's background
	// processes, and the Docker-backed categories talk to their container.
	Host func(ctx context.Context, c HostCall) Result

	// run executes the call inside the worker.
	run func(ctx context.Context, x *execCtx, args json.RawMessage) Result
	// schema is Schema, resolved by NewRegistry.
	schema *jsonschema.Resolved
}

// CallContext says who calls and why. Agent and Role select the toolset
// (policy [agents.*], [roles.*]); TaskID also names the bash session whose
// working directory and environment carry over; IdempotencyKey makes a
// repeated write or edit return the first result instead of applying
// twice; Unattended tells the policy gate nobody can approve.
type CallContext struct {
	Agent          string `json:"agent,omitempty"`
	Role           string `json:"role,omitempty"`
	TaskID         string `json:"task_id,omitempty"`
	TraceID        string `json:"trace_id,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	Unattended     bool   `json:"unattended,omitempty"`
}

// HostCall is one call of a tool that runs in the supervisor (Tool.Host),
// after the policy gate allowed it.
type HostCall struct {
	Args    json.RawMessage
	Context CallContext
	// Request is the call's id as the caller sent it (JSON), for correlation in records.
	Request   string
	Timeout   time.Duration
	OutputCap int

	// bg are the calling server's background processes.
	bg *background
}

// Result is what a call returns: text for a model and structured metadata.
// A failing call is a Result with IsError set, never a Go error.
type Result struct {
	Content string         `json:"content"`
	IsError bool           `json:"is_error"`
	Meta    map[string]any `json:"meta,omitempty"`
}

// errorf is an error result.
func errorf(format string, a ...any) Result {
	return Result{Content: fmt.Sprintf(format, a...), IsError: true}
}

// Info is the tool's declaration as the policy reads it.
func (t *Tool) Info() policy.ToolInfo {
	return policy.ToolInfo{Name: t.Name, Description: t.Description, Risk: t.Risk, Capabilities: t.Capabilities}
}

// Definition is a tool as a harness lists it (list_tools).
type Definition struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Risk        policy.Risk     `json:"risk"`
}

// Definition is the listing form of t.
func (t *Tool) Definition() Definition {
	return Definition{Name: t.Name, Description: t.Description, InputSchema: json.RawMessage(t.Schema), Risk: policy.EffectiveRisk(t.Info())}
}

// Registry holds the tools a process offers, in a stable order. It is built
// in main (or in a test) and never changes afterwards, so it needs no lock.
type Registry struct {
	tools []*Tool
}

// MaxDescription is the longest description a tool may carry: it costs
// context on every call of every model that lists it.
const MaxDescription = 200

// NewRegistry checks and compiles the tools, keeping their order.
func NewRegistry(ts ...*Tool) (*Registry, error) {
	r := &Registry{}
	seen := map[string]bool{}
	for _, t := range ts {
		switch {
		case t.Name == "" || seen[t.Name]:
			return nil, fmt.Errorf("registry: tool %q: empty or repeated name", t.Name)
		case len(t.Description) == 0 || len(t.Description) > MaxDescription:
			return nil, fmt.Errorf("registry: tool %s: description of %d bytes (want 1 to %d)", t.Name, len(t.Description), MaxDescription)
		case (t.run == nil) == (t.Host == nil):
			return nil, fmt.Errorf("registry: tool %s: wants exactly one implementation (in the worker or in the supervisor)", t.Name)
		}
		seen[t.Name] = true
		var doc jsonschema.Schema
		if err := json.Unmarshal([]byte(t.Schema), &doc); err != nil {
			return nil, fmt.Errorf("registry: tool %s: schema: %w", t.Name, err)
		}
		var err error
		if t.schema, err = doc.Resolve(nil); err != nil {
			return nil, fmt.Errorf("registry: tool %s: schema: %w", t.Name, err)
		}
		r.tools = append(r.tools, t)
	}
	return r, nil
}

// Readiness is one tool's answer to "can it run here?".
type Readiness struct {
	Tool  string `json:"tool"`
	Ready bool   `json:"ready"`
	Why   string `json:"why,omitempty"`
}

// Readiness asks every tool, in registration order.
func (r *Registry) Readiness() []Readiness {
	out := make([]Readiness, len(r.tools))
	for i, t := range r.tools {
		out[i] = Readiness{Tool: t.Name, Ready: true}
		if err := t.ready(); err != nil {
			out[i].Ready, out[i].Why = false, err.Error()
		}
	}
	return out
}

func (t *Tool) ready() error {
	if t.Ready == nil {
		return nil
	}
	return t.Ready()
}

// Tools are the registered tools in registration order.
func (r *Registry) Tools() []*Tool { return r.tools }

// Lookup finds a tool by name.
func (r *Registry) Lookup(name string) (*Tool, bool) {
	for _, t := range r.tools {
		if t.Name == name {
			return t, true
		}
	}
	return nil, false
}

// Infos are the declarations the policy resolves toolsets from.
func (r *Registry) Infos() []policy.ToolInfo {
	out := make([]policy.ToolInfo, len(r.tools))
	for i, t := range r.tools {
		out[i] = t.Info()
	}
	return out
}

// Validate checks args against the tool's schema. The error names the
// argument at fault, so a model can correct its call.
func (t *Tool) Validate(args json.RawMessage) error {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if err := t.schema.Validate(v); err != nil {
		return fmt.Errorf("invalid arguments: %s", describeValidation(err))
	}
	return nil
}

// describeValidation turns the library's message, a chain such as
// "validating root: validating /properties/limit: minimum: 0/1 is less than
// 1.000000", into one naming the argument: "argument /limit: minimum: 0/1
// is less than 1.000000".
func describeValidation(err error) string {
	msg, path := err.Error(), "(root)"
	for {
		rest, ok := strings.CutPrefix(msg, "validating ")
		if !ok {
			break
		}
		p, detail, ok := strings.Cut(rest, ": ")
		if !ok {
			break
		}
		if p != "root" {
			path = strings.ReplaceAll(p, "/properties/", "/")
		}
		msg = detail
	}
	return "argument " + path + ": " + msg
}
