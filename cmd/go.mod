module github.com/cryptopay/cryptopay-go/cmd

go 1.26.0

require (
	github.com/cryptopay/cryptopay-go v0.0.0
	github.com/shopspring/decimal v1.6.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/google/uuid v1.6.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

replace github.com/cryptopay/cryptopay-go => ../
