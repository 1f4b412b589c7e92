package main

import (
	cryptopay "github.com/cryptopay/cryptopay-go"
)

// show runs a command that reads one thing through the API and prints it:
// as JSON, or through table (which writes CSV under --output csv). args holds exactly nargs positional arguments.
func show[T any](a *app, cmd command, args []string, nargs int,
	read func(c *cryptopay.Client, pos []string) (T, error), table func(T) error) error {
	fs := a.newFlagSet(cmd)
	a.writes(fs, outJSON, outTable, outCSV)
	pos, asJSON, err := a.parseOutput(fs, args, nargs, nargs)
	if err != nil {
		return err
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	v, err := read(c, pos)
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(v)
	}
	return table(v)
}

func (a *app) balances(args []string) error {
	return show(a, command{"balances", "", "Show the merchant's balance in each currency and network."}, args, 0,
		func(c *cryptopay.Client, _ []string) ([]cryptopay.Balance, error) { return c.GetBalances(a.ctx) },
		func(bs []cryptopay.Balance) error {
			rows := make([][]string, len(bs))
			for i, b := range bs {
				rows[i] = []string{b.Currency, b.Network, money(b.Amount)}
			}
			return a.printTable([]string{"CURRENCY", "NETWORK", "AMOUNT"}, rows)
		})
}

func (a *app) currencies(args []string) error {
	return show(a, command{"currencies", "", "List the currency and network pairs the API supports."}, args, 0,
		func(c *cryptopay.Client, _ []string) ([]cryptopay.Currency, error) { return c.ListCurrencies(a.ctx) },
		func(cs []cryptopay.Currency) error {
			rows := make([][]string, len(cs))
			for i, cur := range cs {
				rows[i] = []string{cur.Currency, cur.Network}
			}
			return a.printTable([]string{"CURRENCY", "NETWORK"}, rows)
		})
}
