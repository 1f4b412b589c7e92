module github.com/cryptopay/cryptopay-go/scripts/releasetool

go 1.26.0

require golang.org/x/mod v0.41.0

require (
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
