package browser

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
)

// maxInFlight bounds the requests fetched at once for one browser; the rest wait paused.
const maxInFlight = 16

// interceptor answers the paused requests of one browser with an Egress.
type interceptor struct {
	eg    *Egress
	slots chan struct{}
	wg    sync.WaitGroup

	// inflight counts the requests being answered; last is when one last began or ended
	// (unix nanoseconds). An action's report waits for both to be quiet.
	inflight atomic.Int64
	last     atomic.Int64
}

// quiet reports whether no request is in flight and none began or ended for d.
func (ic *interceptor) quiet(d time.Duration) bool {
	return ic.inflight.Load() == 0 && time.Since(time.Unix(0, ic.last.Load())) >= d
}

// intercept pauses every request of the browser of ctx and answers it with eg. Interception
// is enabled on the browser's own session, not on each page's: the browser's network layer
// then pauses the requests of every target it has and will have (pages, popups, iframes in
// their own process, dedicated and shared workers) with no moment between a target's
// creation and its interception. A request that is somehow not paused still goes nowhere:
// the container has no network.
func intercept(ctx context.Context, eg *Egress) (ic *interceptor, err error) {
	ic = &interceptor{eg: eg, slots: make(chan struct{}, maxInFlight)}
	if err := chromedp.ListenBrowser(ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			ic.wg.Add(1)
			ic.inflight.Add(1)
			ic.last.Store(time.Now().UnixNano())
			go func() {
				// Lifetime: one request, bounded by eg.Timeout and ctx.
				defer ic.wg.Done()
				defer func() {
					ic.last.Store(time.Now().UnixNano())
					ic.inflight.Add(-1)
				}()
				ic.answer(ctx, e)
			}()
		}
	}); err != nil {
		return nil, fmt.Errorf("browser: listen for paused requests: %w", err)
	}
	if _, err := chromedp.CallBrowser(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*", RequestStage: fetch.RequestStageRequest}}}); err != nil {
		return nil, fmt.Errorf("browser: enable request interception: %w", err)
	}
	return ic, nil
}

// answer fetches one paused request and fulfils it, or fails it with the reason.
func (ic *interceptor) answer(ctx context.Context, e *fetch.EventRequestPaused) {
	select {
	case ic.slots <- struct{}{}:
		defer func() { <-ic.slots }()
	case <-ctx.Done():
		return
	}
	// The URL comes without its fragment, which never goes to a server.
	r := Request{Method: e.Request.Method, URL: e.Request.URL, Header: http.Header{}, Kind: string(e.ResourceType)}
	for k, v := range e.Request.Headers {
		if s, ok := v.(string); ok {
			r.Header.Set(k, s)
		}
	}
	var fetchErr error
	if e.Request.HasPostData && len(e.Request.PostDataEntries) == 0 {
		fetchErr = &Refusal{Reason: "Failed", Why: "the request's body did not reach jail (too large for the browser to pass on)"}
	}
	for _, p := range e.Request.PostDataEntries {
		r.Body = append(r.Body, p.Bytes...)
	}
	var res *Response
	if fetchErr == nil {
		res, fetchErr = ic.eg.Fetch(ctx, r)
	}
	if fetchErr != nil {
		ref := refusal(fetchErr)
		chromedp.CallBrowser(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: e.RequestID, ErrorReason: ref.Reason})
		return
	}
	var hs []*fetch.HeaderEntry
	keys := make([]string, 0, len(res.Header))
	for k := range res.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range res.Header[k] {
			if strings.ContainsAny(v, "\r\n\x00") {
				continue
			}
			hs = append(hs, &fetch.HeaderEntry{Name: k, Value: v})
		}
	}
	if _, err := chromedp.CallBrowser(ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: e.RequestID, ResponseCode: int64(res.Status), ResponseHeaders: hs, Body: res.Body}); err != nil {
		// A status the browser does not take (1xx, say) still fails closed.
		chromedp.CallBrowser(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: e.RequestID, ErrorReason: "Failed"})
	}
}
