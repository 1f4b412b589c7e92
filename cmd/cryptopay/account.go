package main

func (a *app) balances(args []string) error {
	fs := a.newFlagSet(command{"balances", "", "Show the merchant's balance in each currency and network."})
	if _, err := a.parse(fs, args, 0, 0); err != nil {
		return err
	}
	asJSON, err := a.jsonOutput()
	if err != nil {
		return err
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	bs, err := c.GetBalances(a.ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(bs)
	}
	rows := make([][]string, len(bs))
	for i, b := range bs {
		rows[i] = []string{b.Currency, b.Network, money(b.Amount)}
	}
	return a.printTable([]string{"CURRENCY", "NETWORK", "AMOUNT"}, rows)
}

func (a *app) currencies(args []string) error {
	fs := a.newFlagSet(command{"currencies", "", "List the currency and network pairs the API supports."})
	if _, err := a.parse(fs, args, 0, 0); err != nil {
		return err
	}
	asJSON, err := a.jsonOutput()
	if err != nil {
		return err
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	cs, err := c.ListCurrencies(a.ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(cs)
	}
	rows := make([][]string, len(cs))
	for i, cur := range cs {
		rows[i] = []string{cur.Currency, cur.Network}
	}
	return a.printTable([]string{"CURRENCY", "NETWORK"}, rows)
}
