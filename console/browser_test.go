package console_test

import (
	"context"
	"flag"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/internal/toolnotice"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "write the browser test's screenshot to docs/console.png")

// chromiumPath is the browser CI installs; PATH is searched too.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	toolnotice.Missing(t, "no chromium for the console's browser test (apt-get install chromium)")
	return ""
}

// browser starts headless Chromium; tab opens a tab of it that sends
// every request as actor (the header testAuthorize reads).
type browser struct{ ctx context.Context }

func startBrowser(t *testing.T, ctx context.Context) browser {
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true), chromedp.Flag("force-color-profile", "srgb"))
	bctx, cancel := chromedp.NewContext(alloc)
	require.NoError(t, chromedp.Do(bctx)) // the browser itself
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return browser{bctx}
}

func (b browser) tab(t *testing.T, actor string) context.Context {
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	_, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{actorHeader: actor}})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 860)))
	return ctx
}

// text returns the text of the element sel on the page now.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(t, err)
	return s
}

// count returns how many elements match sel on the page now.
func count(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
	require.NoError(t, err)
	return n
}

// act opens a payout's page, follows its action link and confirms it with
// note, as a person clicks, and returns the text the console answered.
func act(t *testing.T, ctx context.Context, base, orderID, action, note string) string {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/payout?id="+url.QueryEscape(orderID)),
		chromedp.Click(chromedp.CSS("#act-"+action)),
		chromedp.WaitVisible(chromedp.CSS("#confirm")),
		chromedp.SendKeys(chromedp.CSS("#text"), note),
		chromedp.Click(chromedp.CSS("#confirm")),
		chromedp.WaitVisible(chromedp.CSS("#flash, #problem")),
	))
	return text(t, ctx, "body")
}

// payAtFake moves the fake's payout of orderID to paid.
func (r *rig) payAtFake(t *testing.T, orderID string) {
	t.Helper()
	for _, p := range r.fake.Payouts() {
		if p.OrderID == orderID {
			require.NoError(t, r.fake.SetPayoutStatus(p.ID, cryptopay.PayoutProcessing))
			require.NoError(t, r.fake.SetPayoutStatus(p.ID, cryptopay.PayoutPaid))
			return
		}
	}
	t.Fatalf("no payout at the fake for %s", orderID)
}

// waitState waits for the intent to reach want (30 s at most).
func (r *rig) waitState(t *testing.T, orderID string, want pgstore.IntentState) {
	t.Helper()
	require.Eventually(t, func() bool { return r.state(t, orderID) == want }, 30*time.Second, 10*time.Millisecond, "%s never %s", orderID, want)
}

// TestBrowser drives the console, mounted under /ops/, in headless
// Chromium against PostgreSQL and the fake: two approvers' clicks send a
// large payout exactly once; one approver's two clicks send nothing; a
// viewer sees no action and a viewer's forged POST is 403; another site's
// POST is 403; a parked intent is retried and paid.
func TestBrowser(t *testing.T) {
	r := newRig(t)
	twoEyes, oneEyes, parked := payout(1, "2500"), payout(2, "900"), payout(3, "40")
	r.enqueue(t, twoEyes, oneEyes, parked)
	// The note is the operators' own field (no worker writes it): text with
	// a bidi override, as a hostile note or server text could carry.
	_, err := r.pool.Exec(context.Background(), "UPDATE "+r.q.Table()+" SET state = 'parked', hold = 'max_attempts', attempts = 3, note = $2 WHERE order_id = $1",
		parked.OrderID, "see ticket \u202egnp.exe")
	require.NoError(t, err)
	r.run(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b := startBrowser(t, ctx)
	a, bo, op, vi := b.tab(t, alice), b.tab(t, bob), b.tab(t, operator), b.tab(t, viewer)

	// Four eyes through the browser.
	assert.Contains(t, act(t, a, r.base, twoEyes.OrderID, "approve", "KYC checked"), "Your approval is recorded")
	assert.Equal(t, "1 of 2: alice", text(t, a, "#approvals"))
	assert.Zero(t, count(t, a, "#act-approve"), "no second approval offered to alice")
	assert.Equal(t, pgstore.StateNeedsApproval, r.state(t, twoEyes.OrderID))
	assert.Contains(t, act(t, bo, r.base, twoEyes.OrderID, "approve", "second pair of eyes"), "Your approval is recorded")
	r.waitState(t, twoEyes.OrderID, pgstore.StateCreated)
	r.payAtFake(t, twoEyes.OrderID)
	r.waitState(t, twoEyes.OrderID, pgstore.StatePaid)
	assert.Equal(t, 1, r.fake.PayoutsWithOrderID(twoEyes.OrderID), "exactly one payout")

	// One approver, twice: the second confirmation is refused.
	assert.Contains(t, act(t, a, r.base, oneEyes.OrderID, "approve", "first"), "Your approval is recorded")
	require.NoError(t, chromedp.Do(a, chromedp.Navigate(r.base+"/payout/confirm?action=approve&id="+oneEyes.OrderID),
		chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#problem"))))
	assert.Contains(t, text(t, a, "#problem"), "approved \"wd-000002\" already")

	// A viewer sees no action; their forged POST is 403.
	require.NoError(t, chromedp.Do(vi, chromedp.Navigate(r.base+"/payout?id="+oneEyes.OrderID), chromedp.WaitVisible(chromedp.CSS("#history"))))
	assert.Zero(t, count(t, vi, "form[method=post], a.button"), "a viewer sees no action")
	code, _ := r.do(t, "POST", "/payout/approve", viewer, url.Values{"id": {oneEyes.OrderID}})
	assert.Equal(t, http.StatusForbidden, code)

	// Another site's page posts bob's approval through bob's browser.
	assert.Contains(t, postFromOtherOrigin(t, bo, r.base, oneEyes.OrderID), "another site")
	in, err := r.q.Get(context.Background(), oneEyes.OrderID)
	require.NoError(t, err)
	assert.Equal(t, []string{"alice"}, in.ApprovedBy, "the cross-origin POST changed nothing")
	assert.Equal(t, pgstore.StateNeedsApproval, in.State)
	assert.Zero(t, r.fake.PayoutsWithOrderID(oneEyes.OrderID), "one approver's clicks send nothing")

	// A parked intent, retried by an operator, is paid.
	require.NoError(t, chromedp.Do(op, chromedp.Navigate(r.base+"/payouts?state=parked"), chromedp.Click(chromedp.CSS("a.id")), chromedp.WaitVisible(chromedp.CSS("#note"))))
	assert.Equal(t, `see ticket \u202egnp.exe`, text(t, op, "#note"), "the bidi override is shown, not obeyed")
	assert.Contains(t, act(t, op, r.base, parked.OrderID, "retry", "no payout at the processor, ticket 9"), "Queued for a new attempt")
	r.waitState(t, parked.OrderID, pgstore.StateCreated)
	r.payAtFake(t, parked.OrderID)
	r.waitState(t, parked.OrderID, pgstore.StatePaid)
	assert.Equal(t, 1, r.fake.PayoutsWithOrderID(parked.OrderID))
	hist, err := r.q.History(context.Background(), parked.OrderID)
	require.NoError(t, err)
	assert.Contains(t, whoDid(hist), "olga", "the operator's id is in the history")

	screenshot(t, a, r.base+"/payout?id="+twoEyes.OrderID)
}

// postFromOtherOrigin opens, in the browser tab ctx, a page of another
// origin (another port: the browser calls it same-site, which the
// protection refuses as it does cross-site) whose form posts an approval
// of orderID to the console, submits it, and returns what the console
// answered.
func postFromOtherOrigin(t *testing.T, ctx context.Context, base, orderID string) string {
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><form method="post" action="%s/payout/approve"><input name="id" value="%s"><button id="go">win a prize</button></form>`,
			html.EscapeString(base), html.EscapeString(orderID))
	}))
	defer evil.Close()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(evil.URL), chromedp.Click(chromedp.CSS("#go")), chromedp.WaitVisible(chromedp.CSS("#problem"))))
	return text(t, ctx, "#problem")
}

// whoDid lists the actor ids of a history.
func whoDid(hist []pgstore.Event) []string {
	var out []string
	for _, e := range hist {
		out = append(out, e.ActorID)
	}
	return out
}

// screenshot saves the page at url to the test's temp dir, or to
// docs/console.png with -update-screenshot.
func screenshot(t *testing.T, ctx context.Context, url string) {
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#history"))))
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.Greater(t, len(shot), 10_000, "a real screenshot")
	path := filepath.Join(t.TempDir(), "console.png")
	if *updateScreenshot {
		path = "../docs/console.png"
	}
	require.NoError(t, os.WriteFile(path, shot, 0o644))
}

// TestBrowserConfirmsWhatWasSeen: a bulk approval confirmed for one set is
// refused (409, nothing moved) when another set matches by the time of
// the POST (the 150 usdt intent rejected meanwhile, a 90,000 usdt one
// arrived: the same count), and the new set is shown; an operator cancels
// a queued payout, which is then never sent.
func TestBrowserConfirmsWhatWasSeen(t *testing.T) {
	r := newRig(t)
	seen, queued, late := payout(21, "150"), payout(22, "40"), payout(23, "90000")
	r.enqueue(t, seen, queued)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b := startBrowser(t, ctx)
	a, op := b.tab(t, alice), b.tab(t, operator)

	require.NoError(t, chromedp.Do(a, chromedp.Navigate(r.base+"/payouts/bulk?action=approve&currency=usdt"),
		chromedp.WaitVisible(chromedp.CSS("#confirm")), chromedp.SendKeys(chromedp.CSS("#count"), "1")))
	assert.Contains(t, text(t, a, "#bulk-totals"), "150 usdt")
	assert.Contains(t, text(t, a, "#bulk-set"), seen.OrderID)
	require.NoError(t, r.q.Reject(context.Background(), seen.OrderID, "bob", "duplicate"))
	r.enqueue(t, late)
	require.NoError(t, chromedp.Do(a, chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#changed"))))
	assert.Contains(t, text(t, a, "#bulk-set"), late.OrderID, "the new set is shown")
	assert.Contains(t, text(t, a, "#bulk-totals"), "90000 usdt")
	in, err := r.q.Get(context.Background(), late.OrderID)
	require.NoError(t, err)
	assert.Empty(t, in.ApprovedBy, "nothing moved")
	assert.Equal(t, 0, r.approvals(t))

	assert.Contains(t, act(t, op, r.base, queued.OrderID, "cancel", "customer withdrew the request"), "Cancelled: nothing will be sent")
	in, err = r.q.Get(context.Background(), queued.OrderID)
	require.NoError(t, err)
	assert.Equal(t, pgstore.StateRejected, in.State)
	assert.Equal(t, "customer withdrew the request", in.Note)
	r.run(t) // the workers send what is queued: another payout, not the cancelled one
	after := payout(24, "30")
	r.enqueue(t, after)
	r.waitState(t, after.OrderID, pgstore.StateCreated)
	assert.Zero(t, r.fake.PayoutsWithOrderID(queued.OrderID), "a cancelled payout is never sent")
}
