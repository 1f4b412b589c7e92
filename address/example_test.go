package address_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cryptopay/cryptopay-go/address"
)

// The zero Checker has the built-in checks: a TRON address is refused on
// an EVM network, a mistyped EIP-55 checksum is refused, and a network
// with no check passes everything through.
func ExampleChecker() {
	var c address.Checker
	fmt.Println(c.Check("tron", "TJRyWwFs9wTFGZg3JbrVriFbNfCug5tDeC"))
	fmt.Println(c.Check("erc20", "TJRyWwFs9wTFGZg3JbrVriFbNfCug5tDeC"))
	fmt.Println(c.Check("eth", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD"))
	fmt.Println(c.Checks("solana"), c.Check("solana", "anything"))
	// Output:
	// <nil>
	// address: invalid erc20 address: is a TRON address, not an EVM (0x) one
	// address: invalid eth address: fails its EIP-55 checksum (the mix of upper and lower case is wrong: a character is mistyped)
	// false <nil>
}

// With adds a check for a network the SDK does not know, or replaces a
// built-in one; the Checker it is called on does not change.
func ExampleChecker_With() {
	var c address.Checker
	strict := c.With("solana", func(addr string) error {
		if len(addr) < 32 || len(addr) > 44 {
			return errors.New("a Solana address has 32 to 44 base58 characters")
		}
		return nil
	}).With("eth", func(addr string) error {
		if err := address.EVM(addr); err != nil {
			return err
		}
		if addr == strings.ToLower(addr) {
			return errors.New("give the EIP-55 checksummed form")
		}
		return nil
	})
	fmt.Println(strict.Check("solana", "short"))
	fmt.Println(strict.Check("eth", "0xde709f2102306220921060314715629080e2fb77"))
	fmt.Println(c.Check("eth", "0xde709f2102306220921060314715629080e2fb77"))
	// Output:
	// a Solana address has 32 to 44 base58 characters
	// give the EIP-55 checksummed form
	// <nil>
}

// Same tells a respelling of an address from another address: a provider
// that answers with an EVM address in lower case names the checksummed
// one the payout was sent to, while base58 is case-sensitive.
func ExampleSame() {
	fmt.Println(address.Same("eth", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"))
	fmt.Println(address.Same("tron", "TJRyWwFs9wTFGZg3JbrVriFbNfCug5tDeC", "tjrywwfs9wtfgzg3jbrvrifbnfcug5tdec"))
	// Output:
	// true
	// false
}
