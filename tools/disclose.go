//go:build linux

package tools

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/jail-sandbox/jail/policy"
)

// Progressive disclosure ([tools] disclosure): with a large toolset, every
// full definition in a model's context on every turn is a tax. A caller
// then gets three levels:
//
//   - list_tools: a Summary of every permitted, ready tool (name, first
//     sentence, risk), plus the full Definition of the tools it loaded;
//   - load_tool: one full Definition, which stays loaded; loaded
//     definitions are bounded by a token budget, and a load that would pass
//     it unloads the oldest-loaded first;
//   - load_tool_resource: one named document of a tool (its schema, its
//     examples), returned inline and never kept loaded.
//
// Loading is bookkeeping for the caller's context only: a call to a tool
// that is not loaded is still decided by the policy and validated against
// the schema as any other.

// Summary is the short form of a tool in a disclosed list.
type Summary struct {
	Name    string `json:"name"`
	Summary string `json:"summary"`
	Risk    string `json:"risk"`
	Loaded  bool   `json:"loaded"`
}

// summary is the first sentence of the description, at most 100 bytes.
func (t *Tool) summary() string {
	s := t.Description
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}

// tokens estimates what a definition costs in a model's context: about
// four bytes a token, the usual rule of thumb for JSON and English.
func (d Definition) tokens() int {
	b, _ := json.Marshal(d)
	return (len(b) + 3) / 4
}

// Disclosure is one caller's loaded definitions, oldest first. jail
// serve keeps one per connection; jail mcp one per process.
type Disclosure struct {
	mu     sync.Mutex
	budget int
	loaded []Definition
	used   int
}

// NewDisclosure starts an empty loaded set bounded by budget tokens.
func NewDisclosure(budget int) *Disclosure {
	if budget <= 0 {
		budget = policy.DefaultDisclosureBudget
	}
	return &Disclosure{budget: budget}
}

// Load adds d (or refreshes it as the newest) and returns the names it had
// to unload to stay within the budget.
func (ds *Disclosure) Load(d Definition) ([]string, error) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	cost := d.tokens()
	if cost > ds.budget {
		return nil, fmt.Errorf("load_tool: the definition of %s (%d tokens) is larger than the whole budget (%d)", d.Name, cost, ds.budget)
	}
	if i := slices.IndexFunc(ds.loaded, func(l Definition) bool { return l.Name == d.Name }); i >= 0 {
		ds.used -= ds.loaded[i].tokens()
		ds.loaded = slices.Delete(ds.loaded, i, i+1)
	}
	var unloaded []string
	for ds.used+cost > ds.budget {
		ds.used -= ds.loaded[0].tokens()
		unloaded = append(unloaded, ds.loaded[0].Name)
		ds.loaded = ds.loaded[1:]
	}
	ds.loaded = append(ds.loaded, d)
	ds.used += cost
	return unloaded, nil
}

// IsLoaded reports whether name is loaded.
func (ds *Disclosure) IsLoaded(name string) bool {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	return slices.ContainsFunc(ds.loaded, func(l Definition) bool { return l.Name == name })
}

// Resource returns one of a tool's documents: "schema" (the arguments'
// JSON Schema), "description" (the whole description) or one of the
// tool's own Resources.
func (t *Tool) Resource(id string) (string, error) {
	switch id {
	case "schema":
		return t.Schema, nil
	case "description":
		return t.Description, nil
	}
	if doc, ok := t.Resources[id]; ok {
		return doc, nil
	}
	ids := []string{"schema", "description"}
	for k := range t.Resources {
		ids = append(ids, k)
	}
	slices.Sort(ids[2:])
	return "", fmt.Errorf("load_tool_resource: %s has no resource %q (it has: %s)", t.Name, id, strings.Join(ids, ", "))
}

// Permitted is the caller's tool, if it may see it: granted by the policy
// and ready to run here.
func (s *Server) Permitted(cc CallContext, name string) (*Tool, error) {
	defs, err := s.ListTools(cc)
	if err != nil {
		return nil, err
	}
	for _, d := range defs {
		if d.Name == name {
			t, _ := s.Registry.Lookup(name)
			return t, nil
		}
	}
	return nil, fmt.Errorf("no tool %q among the tools this caller may use", name)
}

// Summaries is the disclosed list_tools: every permitted tool in short,
// and the full definitions of the loaded ones.
func (s *Server) Summaries(cc CallContext, ds *Disclosure) ([]Summary, []Definition, error) {
	defs, err := s.ListTools(cc)
	if err != nil {
		return nil, nil, err
	}
	sums := make([]Summary, 0, len(defs))
	var full []Definition
	for _, d := range defs {
		t, _ := s.Registry.Lookup(d.Name)
		loaded := ds.IsLoaded(d.Name)
		sums = append(sums, Summary{Name: d.Name, Summary: t.summary(), Risk: d.Risk.String(), Loaded: loaded})
		if loaded {
			full = append(full, d)
		}
	}
	return sums, full, nil
}
