// Package webhook receives the API's events for payments and payouts.
//
// URL signs the webhookUrl of a payment or payout for its orderId; a
// Handler (NewHandler, configured by Config) mounted at that URL checks the
// token, re-reads the event's object through a cryptopay.Client (so the
// callback gets the API's version, never the posted one), wakes that
// Client's waits through cryptopay.Client.Notify, and delivers each
// (id, status) to OnPayment or OnPayout once, as a DedupeStore records.
// MemoryDedupeStore serves one process; replicas share a store (the
// redisstore and pgstore modules provide them).
package webhook
