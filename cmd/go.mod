module github.com/cryptopay/cryptopay-go/cmd

go 1.26

require (
	github.com/cryptopay/cryptopay-go v0.0.0
	github.com/shopspring/decimal v1.6.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-retryablehttp v0.7.8 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

replace github.com/cryptopay/cryptopay-go => ../
