package pgstore

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/text/secure/precis"

	"github.com/cryptopay/cryptopay-go"
	"github.com/cryptopay/cryptopay-go/internal/ids"
)

// actorProfile is the PRECIS profile actor ids are compared in: RFC 8265's
// UsernameCaseMapped (fullwidth and halfwidth forms mapped to their usual
// width, lower case, NFC, the bidi rule; letters, digits and ASCII
// punctuation, no spaces). One person cannot split into two ids that
// differ only in case, width or normalization: "Alice@Shop.example",
// "alice@shop.example" and "ａlice@shop.example" are one id.
var actorProfile = precis.UsernameCaseMapped

// CanonicalActor returns the canonical form of an actor id: the form every
// operator's move and EnqueueBy record, and compare in (four eyes counts
// canonical forms, so two ids with the same one are one person). It
// refuses, with a *cryptopay.ValidationError (Field "actor", matching
// cryptopay.ErrInvalidParams), an empty id, one over 128 bytes, one with
// control or invisible characters, and one the profile refuses (a space,
// a symbol outside ASCII, mixed directions).
func CanonicalActor(id string) (string, error) {
	if why := ids.Text(id, 128); why != "" || id == "" {
		return "", &cryptopay.ValidationError{Field: "actor", Reason: cmpOr(why, "is empty: every operator's move names who made it")}
	}
	if asciiCanonical(id) {
		return id, nil
	}
	out, err := actorProfile.String(id)
	if err == nil && len(out) > 128 {
		err = errors.New("longer than 128 bytes once mapped")
	}
	if err != nil {
		return "", &cryptopay.ValidationError{Field: "actor", Reason: fmt.Sprintf(
			"is not an identifier (letters, digits and ASCII punctuation, no spaces; RFC 8265 UsernameCaseMapped): %v", err)}
	}
	return out, nil
}

// asciiCanonical reports whether s is printable ASCII without upper case:
// the profile leaves such an id as it is.
func asciiCanonical(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= 0x20 || c >= 0x7f || 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return true
}

// actorKey is the form a recorded actor id is compared in: its canonical
// form, or the id as recorded when it has none (a row written before ids
// were canonical, with an id the profile refuses).
func actorKey(recorded string) string {
	if recorded == "" || asciiCanonical(recorded) {
		return recorded
	}
	if c, err := CanonicalActor(recorded); err == nil {
		return c
	}
	return recorded
}

// Operator is who makes an operator's move: the actor id the history
// records, and the login the tool authenticated.
type Operator struct {
	// ID is the actor id recorded in the history and counted by four
	// eyes, in its canonical form (CanonicalActor).
	ID string
	// Login is who the tool established is at the keyboard, whatever ID
	// says: the operating system's user for the CLI, the signed-in user
	// for the console. "" takes ID for it (a Go caller that trusts its
	// actor ids). With the database's session_user it makes the
	// approval's principal: one principal's approvals count once,
	// whatever IDs it gives (Intent.ApprovedPrincipals). It must pass
	// CanonicalActor too.
	Login string
}

// canonical returns o with ID and Login in canonical form (Login: ID's
// when empty), or the *cryptopay.ValidationError of the one that fails.
func (o Operator) canonical() (Operator, error) {
	id, err := CanonicalActor(o.ID)
	if err != nil {
		return o, err
	}
	login := id
	if o.Login != "" {
		var ve *cryptopay.ValidationError
		if login, err = CanonicalActor(o.Login); errors.As(err, &ve) {
			return o, &cryptopay.ValidationError{Field: "login", Reason: ve.Reason}
		}
	}
	return Operator{ID: id, Login: login}, nil
}

// principal is who an approval by o (canonical) counts for, on a
// connection whose session_user is role: the login (canonical, so it
// holds no space) and the role, quoted. Two approvals with one principal
// count once.
func (o Operator) principal(role string) string {
	return o.Login + " as database role " + strconv.Quote(role)
}
