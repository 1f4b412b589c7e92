package pgstore

import (
	"errors"
	"fmt"

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
