module github.com/keelpay/keelpay/provider/stripe

go 1.26.8

require (
	github.com/keelpay/keelpay v0.0.0
	github.com/stretchr/testify v1.12.1
	github.com/stripe/stripe-go/v84 v84.4.1
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect

replace github.com/keelpay/keelpay => ../..
