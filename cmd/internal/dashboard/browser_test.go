package dashboard_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"image"
	"image/color"
	"image/png"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/cmd/internal/fakeserve"
	"github.com/cryptopay/cryptopay-go/cmd/internal/toolnotice"
	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "write the browser test's screenshot to docs/dashboard.png")

// screenshotPath is the README's screenshot, from this package's folder.
const screenshotPath = "../../../docs/dashboard.png"

// findChromium returns the browser to drive. Without one the test fails
// when CI=true and is skipped (loudly) otherwise.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	toolnotice.Missing(t, "no chromium on PATH for the dashboard's browser test (apt-get install chromium)")
	return ""
}

// hookReceiver is a merchant's webhook endpoint: it answers 503 to the
// first delivery for orders named in flaky, 200 otherwise.
type hookReceiver struct {
	mu       sync.Mutex
	flaky    map[string]bool
	statuses map[string][]string // orderId -> statuses received with 200
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ev struct {
		OrderID string `json:"orderId"`
		Status  string `json:"status"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if json.Unmarshal(body, &ev) != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.flaky[ev.OrderID] {
		delete(h.flaky, ev.OrderID)
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	h.statuses[ev.OrderID] = append(h.statuses[ev.OrderID], ev.Status)
}

func (h *hookReceiver) received(orderID string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.statuses[orderID]...)
}

// TestBrowser drives the dashboard in headless Chromium: the QR code shown
// for a payment decodes to its payQrCodeUri, "Pay in full" makes the
// payment paid as the SDK sees it, and the webhook shows as delivered. It
// saves the screenshot the README shows (-update-screenshot writes
// docs/dashboard.png).
func TestBrowser(t *testing.T) {
	browser := findChromium(t)
	hooks := &hookReceiver{flaky: map[string]bool{"order-1003": true}, statuses: map[string][]string{}}
	recv := httptest.NewServer(hooks)
	t.Cleanup(recv.Close)

	inst, err := fakeserve.Start(fakeserve.Config{Addr: "127.0.0.1:0", Options: []cryptopaytest.ServerOption{
		cryptopaytest.WithCurrencies(cryptopaytest.Currency{Currency: "usdt", Network: "tron"},
			cryptopaytest.Currency{Currency: "btc", Network: "bitcoin"}, cryptopaytest.Currency{Currency: "eth", Network: "eth"}),
		cryptopaytest.WithBalance("usdt", "tron", decimal.RequireFromString("5000")),
		cryptopaytest.WithWebhookRetry(3, 20*time.Millisecond),
	}})
	require.NoError(t, err)
	t.Cleanup(inst.Close)
	client, err := cryptopay.NewClient(inst.URL, inst.Server.APIKey) // through the runner's /v1/
	require.NoError(t, err)
	t.Cleanup(client.CloseIdleConnections)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pay := sampleState(ctx, t, client, inst.Server, recv.URL+"/webhooks/cryptopay")

	bctx, stop := newBrowser(ctx, t, browser)
	defer stop()
	row := "#payment-" + pay.ID
	require.NoError(t, chromedp.Do(bctx,
		chromedp.EmulateViewport(1360, 900),
		chromedp.Navigate(inst.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(row+" img")),
	))
	_, err = chromedp.Run(bctx, chromedp.Poll[bool](`(() => { const i = document.querySelector('`+row+` img'); return i.complete && i.naturalWidth > 0; })()`))
	require.NoError(t, err, "the QR image loads")
	qrData, err := chromedp.Run(bctx, chromedp.Evaluate[string](`(() => {
		const i = document.querySelector('`+row+` img');
		const c = document.createElement('canvas');
		c.width = i.naturalWidth; c.height = i.naturalHeight;
		c.getContext('2d').drawImage(i, 0, 0);
		return c.toDataURL('image/png');
	})()`))
	require.NoError(t, err)
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(qrData, "data:image/png;base64,"))
	require.NoError(t, err)
	assert.Equal(t, pay.PayQRCodeURI, decodeQR(t, raw), "the QR code the browser shows is the payment's payQrCodeUri")

	require.NoError(t, chromedp.Do(bctx, chromedp.Click(chromedp.CSS(row+` button[data-how="full"]`))))
	require.Eventually(t, func() bool {
		p, err := client.GetPayment(ctx, pay.ID)
		return err == nil && p.Status == cryptopay.PaymentPaid
	}, 10*time.Second, 20*time.Millisecond, "the SDK sees the payment paid after the click")
	p, err := client.GetPayment(ctx, pay.ID)
	require.NoError(t, err)
	assert.Equal(t, pay.PayAmount.String(), p.PaidAmount.Decimal.String(), "paid exactly the amount due")

	delivered := `#webhooks tr.webhook[data-object="` + pay.ID + `"][data-status="paid"][data-delivered="true"]`
	require.NoError(t, chromedp.Do(bctx,
		chromedp.WaitVisible(chromedp.CSS(row+`[data-status="paid"]`)),
		chromedp.WaitVisible(chromedp.CSS(delivered)),
	))
	flash, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#flash")))
	require.NoError(t, err)
	assert.Contains(t, flash, "now paid")
	assert.Equal(t, []string{"paid"}, hooks.received("order-1001"), "the merchant's receiver got the paid event")

	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	saveScreenshot(t, shot)

	phoneWidth(bctx, t)
}

// phoneWidth checks the page at a phone's width (420 CSS px): nothing
// makes the page scroll sideways, and no button, field or status badge
// reaches past the window's right edge, so every action stays usable.
func phoneWidth(bctx context.Context, t *testing.T) {
	t.Helper()
	require.NoError(t, chromedp.Do(bctx,
		chromedp.EmulateViewport(420, 900),
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS("#webhooks")),
	))
	type widths struct {
		ScrollWidth int      `json:"scrollWidth"`
		InnerWidth  int      `json:"innerWidth"`
		Outside     []string `json:"outside"`
		Controls    int      `json:"controls"`
	}
	w, err := chromedp.Run(bctx, chromedp.Evaluate[widths](`(() => {
		const all = [...document.querySelectorAll('button, input, select, .badge')];
		const outside = all.filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && (r.right > window.innerWidth + 0.5 || r.left < -0.5); })
			.map(e => e.outerHTML.slice(0, 80));
		return {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth, outside, controls: all.length};
	})()`))
	require.NoError(t, err)
	assert.Equal(t, 420, w.InnerWidth)
	assert.LessOrEqual(t, w.ScrollWidth, w.InnerWidth, "the page does not scroll sideways at 420 px")
	assert.Greater(t, w.Controls, 10, "the page has its buttons and fields")
	assert.Empty(t, w.Outside, "controls past the window's edge at 420 px")
}

// sampleState fills the fake with what a developer would have after a few
// minutes of testing, and returns the payment the test pays by clicking.
func sampleState(ctx context.Context, t *testing.T, client *cryptopay.Client, srv *cryptopaytest.Server, hook string) *cryptopay.Payment {
	t.Helper()
	newPayment := func(amount, cur, network, order string) *cryptopay.Payment {
		p, err := client.CreatePayment(ctx, cryptopay.CreatePaymentParams{Amount: decimal.RequireFromString(amount), PlatformFeeByUser: true,
			Currency: cur, Network: network, CustomerID: "cust-42", CustomerIP: "192.0.2.42", OrderID: order, WebhookURL: hook})
		require.NoError(t, err)
		return p
	}
	newPayout := func(amount, order, wallet string) *cryptopay.Payout {
		p, err := client.CreatePayout(ctx, cryptopay.CreatePayoutParams{WalletAddress: wallet, Amount: decimal.RequireFromString(amount),
			Currency: "usdt", Network: "tron", CustomerID: "cust-7", CustomerIP: "192.0.2.7", OrderID: order, WebhookURL: hook})
		require.NoError(t, err)
		return p
	}
	expired := newPayment("0.0025", "btc", "bitcoin", "order-1000")
	require.NoError(t, srv.SetPaymentStatus(expired.ID, cryptopay.PaymentExpired))
	partial := newPayment("0.35", "eth", "eth", "order-1003")
	require.NoError(t, srv.Pay(partial.ID, decimal.RequireFromString("0.2")))
	paid := newPayout("250", "payout-2001", "TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7")
	require.NoError(t, srv.SetPayoutStatus(paid.ID, cryptopay.PayoutProcessing))
	require.NoError(t, srv.SetPayoutStatus(paid.ID, cryptopay.PayoutPaid))
	review := newPayout("1200", "payout-2002", "TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL")
	require.NoError(t, srv.SetPayoutStatus(review.ID, cryptopay.PayoutReview))
	p := newPayment("49.99", "usdt", "tron", "order-1001")
	require.NoError(t, srv.WaitWebhooksIdle(ctx))
	return p
}

// newBrowser starts headless Chromium with a throwaway profile.
func newBrowser(ctx context.Context, t *testing.T, path string) (context.Context, func()) {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // tests run as root in CI's container
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.UserDataDir(t.TempDir()),
	)
	bctx, cancelCtx := chromedp.NewContext(alloc)
	return bctx, func() { cancelCtx(); cancelAlloc() }
}

// saveScreenshot checks the screenshot is a real PNG and writes it to the
// test's temp dir, or to docs/dashboard.png with -update-screenshot.
func saveScreenshot(t *testing.T, shot []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, img.Bounds().Dx(), 1000)
	path := filepath.Join(t.TempDir(), "dashboard.png")
	if *updateScreenshot {
		path = screenshotPath
		shot = shrinkPNG(t, img)
	}
	require.NoError(t, os.WriteFile(path, shot, 0o644))
	t.Logf("screenshot: %s (%d KiB)", path, len(shot)>>10)
}

// shrinkPNG re-encodes a screenshot with its 256 most frequent colours (the
// page is flat colours and anti-aliased text, so nothing visible is lost):
// about a third of the size, which keeps the repository small.
func shrinkPNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	b := img.Bounds()
	counts := make(map[color.RGBA]int)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			counts[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	byUse := slices.SortedFunc(maps.Keys(counts), func(a, b color.RGBA) int { return counts[b] - counts[a] })
	pal := make(color.Palette, 0, 256)
	for _, c := range byUse[:min(len(byUse), 256)] {
		pal = append(pal, c)
	}
	out := image.NewPaletted(b, pal)
	index := make(map[color.RGBA]uint8, len(counts))
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			i, ok := index[c]
			if !ok {
				i = uint8(pal.Index(c))
				index[c] = i
			}
			out.SetColorIndex(x, y, i)
		}
	}
	var buf bytes.Buffer
	require.NoError(t, (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, out))
	return buf.Bytes()
}
