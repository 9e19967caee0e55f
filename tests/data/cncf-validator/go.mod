module github.com/cncf/ai-conformance

go 1.25.5

require gopkg.in/yaml.v3 v3.0.1
