package console

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/pgstore"
)

// fail shows msg (the console's own words, or a refusal's text, escaped)
// on the error page with status.
func (c *console) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	v := c.newView(r, http.StatusText(status), msg)
	v.CanApprove, v.CanOperate = false, false
	c.render(w, r, status, "error", v)
}

// failDB logs a database error and shows only that it happened: its text
// may name the database, never shown on a page.
func (c *console) failDB(w http.ResponseWriter, r *http.Request, what string, err error) {
	c.log.Error("console: "+what, "err", err)
	c.fail(w, r, http.StatusInternalServerError, "The database could not be read or written ("+what+"); the error is in the server's log.")
}

// refused shows why a move was refused (its text: the queue's own words,
// ids escaped), or logs a database error.
func (c *console) refused(w http.ResponseWriter, r *http.Request, err error, what string) {
	var ve *cryptopay.ValidationError
	switch {
	case errors.Is(err, pgstore.ErrIntentNotFound), errors.Is(err, pgstore.ErrNotTracked), errors.Is(err, pgstore.ErrUnknownMove),
		errors.Is(err, pgstore.ErrRefundNotFound):
		c.fail(w, r, http.StatusNotFound, err.Error()+": nothing was done.")
	case errors.Is(err, pgstore.ErrIntentState), errors.Is(err, pgstore.ErrApprovalNotCounted), errors.Is(err, pgstore.ErrInvalidOption),
		errors.Is(err, pgstore.ErrChanged), errors.Is(err, pgstore.ErrRefundExceedsPaid), errors.Is(err, pgstore.ErrNothingToRefund),
		errors.Is(err, pgstore.ErrRefundRule), errors.Is(err, pgstore.ErrRefundConflict):
		c.fail(w, r, http.StatusConflict, err.Error()+": nothing was done.")
	case errors.As(err, &ve):
		c.fail(w, r, http.StatusBadRequest, ve.Error()+": nothing was done.")
	default:
		c.failDB(w, r, what, err)
	}
}

// require answers 403 unless the request's actor has role; it reports
// whether the caller may go on.
func (c *console) require(w http.ResponseWriter, r *http.Request, role Role) bool {
	if c.may(r, role) {
		return true
	}
	c.fail(w, r, http.StatusForbidden, fmt.Sprintf("This needs the %s role: nothing was done.", role))
	return false
}
