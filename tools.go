//go:build tools

// This file pins the module's dependencies while the packages that use them
// are written; it is removed once every dependency is imported for real.
package memlayer

import (
	_ "dario.cat/mergo"
	_ "github.com/aymerick/raymond"
	_ "github.com/redis/go-redis/v9"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/tmc/langchaingo/llms"
	_ "github.com/tmc/langchaingo/llms/openai"
	_ "github.com/tmc/langchaingo/schema"
	_ "github.com/tmc/langchaingo/tools"
	_ "golang.org/x/tools/txtar"
	_ "modernc.org/sqlite"
)
