//go:build linux

package tools

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/jail-sandbox/jail/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMCPResult(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	res := mcpResult(Result{Content: "screenshot of example.com", Meta: map[string]any{
		metaImagePNG: base64.StdEncoding.EncodeToString(png), "url": "https://example.com"}})
	if res.IsError || len(res.Content) != 2 {
		t.Fatalf("image result: %+v", res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "screenshot of example.com" {
		t.Fatalf("text block: %+v", res.Content[0])
	}
	img, ok := res.Content[1].(*mcp.ImageContent)
	if !ok || !bytes.Equal(img.Data, png) || img.MIMEType != "image/png" {
		t.Fatalf("image block: %+v", res.Content[1])
	}
	meta := res.Meta[metaKey].(map[string]any)
	if _, dup := meta[metaImagePNG]; dup || meta["url"] != "https://example.com" {
		t.Fatalf("meta: %+v", meta)
	}
	wire, _ := json.Marshal(res)
	if !bytes.Contains(wire, []byte(`"type":"image"`)) || !bytes.Contains(wire, []byte(base64.StdEncoding.EncodeToString(png))) {
		t.Fatalf("wire form: %s", wire)
	}

	// An image alone is one image block; a broken one is an error.
	if res := mcpResult(Result{Meta: map[string]any{metaImagePNG: base64.StdEncoding.EncodeToString(png)}}); len(res.Content) != 1 {
		t.Fatalf("image only: %+v", res.Content)
	}
	if res := mcpResult(Result{Content: "x", Meta: map[string]any{metaImagePNG: "%%%"}}); !res.IsError || len(res.Content) != 1 {
		t.Fatalf("bad image: %+v", res)
	}
	// is_error maps to IsError; an empty text is still one text block.
	if res := mcpResult(Result{IsError: true}); !res.IsError || len(res.Content) != 1 {
		t.Fatalf("error result: %+v", res)
	}
}

func TestMCPToolAnnotations(t *testing.T) {
	for _, tc := range []struct {
		name                                      string
		risk                                      policy.Risk
		caps                                      []string
		readOnly, destructive, openWorld, idempot bool
		title                                     string
	}{
		{"grep", policy.ReadOnly, []string{policy.CapFSRead}, true, false, false, true, "Search file contents"},
		{"edit", policy.Write, []string{policy.CapFSWrite}, false, true, false, false, "Edit a file"},
		{"bash", policy.Exec, []string{policy.CapProcessExec}, false, true, false, false, "Run a shell command"},
		{"web_fetch", policy.ReadOnly, nil, true, false, true, true, "Web fetch"}, // network.outbound from the static map
		{"browser_click", policy.Write, []string{policy.CapBrowser}, false, true, true, false, "Browser click"},
	} {
		tl := mcpTool(Definition{Name: tc.name, Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`), Risk: tc.risk}, tc.caps)
		a := tl.Annotations
		destructive := a.DestructiveHint != nil && *a.DestructiveHint
		if a.ReadOnlyHint != tc.readOnly || destructive != tc.destructive || a.OpenWorldHint == nil || *a.OpenWorldHint != tc.openWorld ||
			a.IdempotentHint != tc.idempot || tl.Title != tc.title || a.Title != tc.title {
			t.Errorf("%s: %+v (title %q)", tc.name, a, tl.Title)
		}
	}
}
