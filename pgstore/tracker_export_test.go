package pgstore

import (
	"context"

	"github.com/cryptopay/cryptopay-go"
)

// SetTrackerHook makes t call fn at its named points ("change-recorded",
// "before-commit"): the crash tests kill the worker there.
func SetTrackerHook(t *Tracker, fn func(point string)) { t.hook = fn }

// TrackerAPI is the one API call the tracker makes (for counting reads).
type TrackerAPI = trackerAPI

// WithTrackerAPI makes the tracker read payments through api.
func WithTrackerAPI(cfg *TrackerConfig, api interface {
	GetPayment(ctx context.Context, id string, opts ...cryptopay.Option) (*cryptopay.Payment, error)
}) {
	cfg.api = api
}
