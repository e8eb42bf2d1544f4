package browser

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// maxKept bounds the console messages and network entries a session keeps unread; the oldest
// go first, counted.
const maxKept = 500

// session is one agent's browser (a container.Resource): the browser, its tabs, and what the
// tools read since their last call.
type session struct {
	b     *Browser
	eg    *Egress
	agent string
	authn *authn // the virtual authenticator, once browser_webauthn_create made it

	mu    sync.Mutex
	tabs  []*tab // in the order they were opened
	cur   *tab
	net   ring[Entry]
	start time.Time
}

// tab is one page of the session.
type tab struct {
	id      target.ID
	ctx     context.Context
	cancel  context.CancelFunc
	refs    refs
	console ring[string]
}

// ring keeps the last maxKept items and counts what it dropped.
type ring[T any] struct {
	items   []T
	dropped int
}

func (r *ring[T]) add(x T) {
	if len(r.items) >= maxKept {
		r.items = r.items[1:]
		r.dropped++
	}
	r.items = append(r.items, x)
}

// take empties the ring.
func (r *ring[T]) take() ([]T, int) {
	items, dropped := r.items, r.dropped
	r.items, r.dropped = nil, 0
	return items, dropped
}

// Close keeps the authenticator's passkeys and ends the browser.
func (s *session) Close() error {
	if s.authn != nil && s.Alive() {
		s.authn.save(context.Background())
	}
	err := s.b.Close()
	s.eg.Close()
	return err
}

func (s *session) Alive() bool {
	select {
	case <-s.b.Done():
		return false
	default:
		return s.b.ctx.Err() == nil
	}
}

// record is the session's Egress.Record: the browser_network log.
func (s *session) record(e Entry) {
	s.mu.Lock()
	s.net.add(e)
	s.mu.Unlock()
}

// adopt makes ctx (a chromedp tab context) one of the session's tabs and listens to its
// console.
func (s *session) adopt(ctx context.Context, cancel context.CancelFunc) (*tab, error) {
	t := &tab{ctx: ctx, cancel: cancel}
	c := chromedp.FromContext(ctx)
	if c == nil || c.Target == nil {
		if err := chromedp.Do(ctx); err != nil {
			return nil, err
		}
		c = chromedp.FromContext(ctx)
	}
	t.id = c.Target.TargetID
	if err := chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			var parts []string
			for _, a := range e.Args {
				switch {
				case len(a.Value) > 0:
					parts = append(parts, strings.Trim(string(a.Value), `"`))
				case a.Description != "":
					parts = append(parts, a.Description)
				default:
					parts = append(parts, string(a.Type))
				}
			}
			msg = string(e.Type) + ": " + strings.Join(parts, " ")
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg = "exception: " + d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				msg += " " + d.Exception.Description
			}
		case *log.EventEntryAdded:
			msg = string(e.Entry.Level) + ": " + e.Entry.Text + " (" + string(e.Entry.Source) + ")"
		default:
			return
		}
		s.mu.Lock()
		t.console.add(clip(msg, 2000))
		s.mu.Unlock()
	}); err != nil {
		return nil, err
	}
	// The log domain reports what the browser itself says about the page (blocked requests,
	// CSP, mixed content); runtime's console is enabled by chromedp.
	chromedp.Call(ctx, log.Enable, struct{}{})
	s.tabs = append(s.tabs, t)
	return t, nil
}

// tab is the current tab, the first one made at launch when none was chosen.
func (s *session) tab() *tab {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// pages lists the browser's pages (tabs and popups), adopting those opened by the pages
// themselves (window.open, target=_blank).
func (s *session) pages(ctx context.Context) ([]*tab, error) {
	ts, err := chromedp.Targets(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the tabs: %w", err)
	}
	live := map[target.ID]bool{}
	for _, ti := range ts {
		if ti.Type != "page" {
			continue
		}
		live[ti.TargetID] = true
		known := false
		for _, t := range s.tabs {
			known = known || t.id == ti.TargetID
		}
		if !known {
			tctx, cancel := chromedp.NewContext(s.b.ctx, chromedp.WithTargetID(ti.TargetID))
			if _, err := s.adopt(tctx, cancel); err != nil {
				cancel()
				continue
			}
		}
	}
	kept := s.tabs[:0]
	for _, t := range s.tabs {
		if live[t.id] {
			kept = append(kept, t)
		} else if s.cur == t {
			s.cur = nil
		}
	}
	s.tabs = kept
	if s.cur == nil && len(s.tabs) > 0 {
		s.cur = s.tabs[0]
	}
	return s.tabs, nil
}
