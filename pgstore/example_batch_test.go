package pgstore_test

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cryptopay/cryptopay-go/pgstore"
)

// Intents enqueued by `cryptopay payout batch` have no row in the
// merchant's tables: the final callback books them by orderId in its own
// transaction (docs/payout-queue.md, "Intents from cryptopay payout batch").
func ExampleQueueConfig_batchIntents() {
	_ = pgstore.QueueConfig{OnFinal: onFinalLedger}
}

// onFinalLedger is docs/payout-queue.md's OnFinal for a queue that also
// holds intents from payout batch.
func onFinalLedger(ctx context.Context, tx pgx.Tx, in *pgstore.Intent) error {
	p := in.Params
	if strings.HasPrefix(p.OrderID, "wd-") { // enqueued with its withdrawal (step 2)
		return onFinal(ctx, tx, in)
	}
	// Enqueued by 'cryptopay payout batch': no withdrawal row holds it. Book it
	// by orderId in this transaction; running OnFinal again updates the same row.
	_, err := tx.Exec(ctx, `INSERT INTO payout_ledger (order_id, state, payout_id, amount, currency, network, wallet_address, source)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 'batch')
		ON CONFLICT (order_id) DO UPDATE SET state = excluded.state, payout_id = excluded.payout_id`,
		p.OrderID, string(in.State), in.PayoutID, p.Amount.String(), p.Currency, p.Network, p.WalletAddress)
	return err
}
