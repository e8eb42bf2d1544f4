package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// A snapshot is an outline of the page's accessibility tree: one line per element that has a
// role worth naming, indented by depth, with a short ref (e1, e2, ...) that the action tools
// take. Refs name elements by the tree's backend DOM node ids; they hold until the page's
// document changes (a navigation, a reload), after which using one is an error that says to
// take a new snapshot.

// maxSnapshotLines bounds a snapshot's outline; the rest is cut with a marker.
const maxSnapshotLines = 800

// skipRoles are roles that only group or lay out: their children are shown in their place.
var skipRoles = map[string]bool{"generic": true, "none": true, "presentation": true, "InlineTextBox": true,
	"LineBreak": true, "RootWebArea": false, "group": false}

// interactive roles always get a ref, named or not.
var interactive = map[string]bool{"button": true, "link": true, "textbox": true, "searchbox": true, "checkbox": true,
	"radio": true, "combobox": true, "listbox": true, "option": true, "menuitem": true, "menuitemcheckbox": true,
	"menuitemradio": true, "slider": true, "spinbutton": true, "switch": true, "tab": true, "treeitem": true}

// states are the properties a line shows when set.
var states = []string{"focused", "checked", "pressed", "expanded", "selected", "disabled", "required", "readonly"}

// line is one element of a snapshot.
type line struct {
	depth int
	role  string
	name  string
	value string
	state []string
	ref   string
	node  cdp.BackendNodeID
}

func (l line) String() string {
	var b strings.Builder
	b.WriteString(strings.Repeat("  ", l.depth))
	b.WriteString("- " + l.role)
	if l.name != "" {
		b.WriteString(" " + strconv.Quote(clip(l.name, 200)))
	}
	if l.value != "" {
		b.WriteString(" value=" + strconv.Quote(clip(l.value, 200)))
	}
	for _, s := range l.state {
		b.WriteString(" [" + s + "]")
	}
	if l.ref != "" {
		b.WriteString(" [ref=" + l.ref + "]")
	}
	return b.String()
}

// plain is the line without its ref, to compare two snapshots of a page.
func (l line) plain() string { l.ref = ""; return l.String() }

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func axString(v *accessibility.Value) string {
	if v == nil || len(v.Value) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(v.Value, &s) == nil {
		return s
	}
	return strings.Trim(string(v.Value), `"`)
}

func axBool(v *accessibility.Value) bool {
	if v == nil || len(v.Value) == 0 {
		return false
	}
	s := string(v.Value)
	return s == "true" || s == `"true"` || s == `"mixed"`
}

// outline reads the page's accessibility tree and returns its lines, in document order.
func outline(ctx context.Context) ([]line, error) {
	tree, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		return nil, fmt.Errorf("read the accessibility tree: %w", err)
	}
	byID := map[accessibility.NodeID]*accessibility.Node{}
	var root *accessibility.Node
	for _, n := range tree.Nodes {
		byID[n.NodeID] = n
		if n.ParentID == "" && root == nil {
			root = n
		}
	}
	var out []line
	var walk func(n *accessibility.Node, depth int)
	walk = func(n *accessibility.Node, depth int) {
		role := axString(n.Role)
		name := axString(n.Name)
		shown := !n.Ignored && !skipRoles[role] && role != "RootWebArea"
		if role == "StaticText" {
			// Text is shown once, by the element that holds it, unless it stands alone.
			shown = name != ""
			role = "text"
		}
		if shown && !interactive[role] && name == "" && role != "img" && role != "heading" && role != "list" && role != "listitem" &&
			role != "table" && role != "row" && role != "cell" && role != "form" && role != "dialog" && role != "navigation" &&
			role != "main" && role != "banner" && role != "contentinfo" && role != "region" && role != "article" {
			shown = false
		}
		next := depth
		if shown {
			l := line{depth: depth, role: role, name: name, node: n.BackendDOMNodeID}
			if interactive[role] {
				l.value = axString(n.Value)
			}
			for _, p := range n.Properties {
				for _, s := range states {
					if string(p.Name) == s && axBool(p.Value) {
						l.state = append(l.state, s)
					}
				}
			}
			out = append(out, l)
			next = depth + 1
		}
		if role == "text" {
			return // its InlineTextBox children repeat it
		}
		for _, id := range n.ChildIDs {
			if c := byID[id]; c != nil {
				walk(c, next)
			}
		}
	}
	if root != nil {
		walk(root, 0)
	}
	// A text line right under an element of the same name repeats it.
	kept := out[:0]
	for i, l := range out {
		if l.role == "text" && i > 0 && out[i-1].depth == l.depth-1 && out[i-1].name == l.name {
			continue
		}
		kept = append(kept, l)
	}
	return kept, nil
}

// documentID names the page's current document: it changes with every navigation, and the
// refs of an earlier document are then stale.
func documentID(ctx context.Context) (string, error) {
	ft, err := chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return "", fmt.Errorf("read the frame tree: %w", err)
	}
	if ft.FrameTree == nil || ft.FrameTree.Frame == nil {
		return "", fmt.Errorf("the page has no main frame")
	}
	return string(ft.FrameTree.Frame.ID) + "/" + string(ft.FrameTree.Frame.LoaderID), nil
}

// render writes the lines that match filter (text in the name, or role=ROLE), giving a ref to
// each, and returns the text and whether lines were cut.
func render(lines []line, filter string, max int) (string, int) {
	var b strings.Builder
	n, cut := 0, 0
	role, byRole := strings.CutPrefix(filter, "role=")
	for _, l := range lines {
		switch {
		case filter == "":
		case byRole && l.role != role:
			continue
		case !byRole && !strings.Contains(strings.ToLower(l.name+" "+l.value), strings.ToLower(filter)):
			continue
		}
		if n >= max {
			cut++
			continue
		}
		if filter != "" {
			l.depth = 0
		}
		b.WriteString(l.String() + "\n")
		n++
	}
	if cut > 0 {
		fmt.Fprintf(&b, "... [%d more elements cut: filter by text or role=ROLE]\n", cut)
	}
	return b.String(), cut
}

// refs are the refs of one tab's current document: stable across snapshots of it (an element
// keeps its ref), dropped when the document changes.
type refs struct {
	doc    string
	byRef  map[string]cdp.BackendNodeID
	byNode map[cdp.BackendNodeID]string
	old    map[string]bool // refs of earlier documents: using one is "stale"
}

// number gives every line of doc's outline a ref, keeping the refs elements already have.
func (r *refs) number(doc string, lines []line) {
	if r.doc != doc {
		if r.old == nil {
			r.old = map[string]bool{}
		}
		for k := range r.byRef {
			r.old[k] = true
		}
		r.doc, r.byRef, r.byNode = doc, map[string]cdp.BackendNodeID{}, map[cdp.BackendNodeID]string{}
	}
	for i := range lines {
		n := lines[i].node
		if n == 0 {
			continue
		}
		ref, ok := r.byNode[n]
		if !ok {
			ref = "e" + strconv.Itoa(len(r.byRef)+len(r.old)+1)
			r.byRef[ref], r.byNode[n] = n, ref
		}
		lines[i].ref = ref
	}
}

// errStale is the one message for a ref that no longer names an element.
func errStale(ref, why string) error {
	return fmt.Errorf("ref %s is stale (%s): take a new snapshot (browser_snapshot) and use its refs", ref, why)
}

// node is the element ref names in doc, the page's current document.
func (r *refs) node(doc, ref string) (cdp.BackendNodeID, error) {
	if r.doc != doc {
		if _, ok := r.byRef[ref]; ok || r.old[ref] {
			return 0, errStale(ref, "the page changed since the snapshot that gave it")
		}
		return 0, fmt.Errorf("no element %s: take a snapshot (browser_snapshot) first and use its refs", ref)
	}
	n, ok := r.byRef[ref]
	switch {
	case ok:
		return n, nil
	case r.old[ref]:
		return 0, errStale(ref, "the page changed since the snapshot that gave it")
	}
	return 0, fmt.Errorf("no element %s in this page's snapshots: take a new snapshot (browser_snapshot) and use its refs", ref)
}

// changes lists what differs between two outlines (lines gone, lines new), at most n of each.
func changes(before, after []line, n int) string {
	count := map[string]int{}
	for _, l := range before {
		count[l.plain()]++
	}
	var added []string
	for _, l := range after {
		k := l.plain()
		if count[k] > 0 {
			count[k]--
			continue
		}
		added = append(added, strings.TrimLeft(l.String(), " "))
	}
	var removed []string
	seen := map[string]int{}
	for _, l := range after {
		seen[l.plain()]++
	}
	for _, l := range before {
		k := l.plain()
		if seen[k] > 0 {
			seen[k]--
			continue
		}
		removed = append(removed, strings.TrimLeft(k, " "))
	}
	var b strings.Builder
	list := func(title string, xs []string) {
		if len(xs) == 0 {
			return
		}
		b.WriteString(title + ":\n")
		for i, x := range xs {
			if i == n {
				fmt.Fprintf(&b, "  ... [%d more]\n", len(xs)-n)
				break
			}
			b.WriteString("  " + x + "\n")
		}
	}
	list("appeared", added)
	list("gone", removed)
	if b.Len() == 0 {
		return "no change in the page's outline\n"
	}
	return b.String()
}
