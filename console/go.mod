module github.com/cryptopay/cryptopay-go/console

go 1.26

require (
	github.com/chromedp/chromedp v0.23.0
	github.com/cryptopay/cryptopay-go v0.1.0
	github.com/cryptopay/cryptopay-go/pgstore v0.1.0
	github.com/jackc/pgx/v5 v5.12.0
	github.com/shopspring/decimal v1.6.0
	github.com/stretchr/testify v1.12.1
)
