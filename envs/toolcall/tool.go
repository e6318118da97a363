package toolcall

import (
	"github.com/nextstate-rl/nextstate/envs/internal/tools"
)

// The tool mechanism is package envs/internal/tools, which the shell kinds
// (terminal-v1, swe-v1) share; these are its names for domains.

// Tool is one function an agent may call, in the OpenAI function-calling
// shape: Parameters is a JSON Schema object.
type Tool = tools.Tool

// Toolset checks tool calls against their tools' schemas (Check).
type Toolset = tools.Toolset

// CallError is a call the Toolset rejected: Reason is one of the Reason
// constants, Message says what was wrong and what the tool accepts.
type CallError = tools.CallError

// ToolError is a tool's failure that the agent reads as the call's result,
// as tau2's tools raise errors ("Error: order not found").
type ToolError = tools.ToolError

// Reasons a call is rejected before it reaches its tool. They are the
// agent's mistakes: the agent reads the message and the episode goes on.
const (
	ReasonUnknownTool  = tools.ReasonUnknownTool
	ReasonBadJSON      = tools.ReasonBadJSON
	ReasonBadArguments = tools.ReasonBadArguments
)

// MaxCallsPerStep bounds the parts of one action (parallel tool calls).
const MaxCallsPerStep = tools.MaxCallsPerStep

// NewToolset compiles the tools' parameter schemas. Names must be unique.
func NewToolset(ts []Tool) (*Toolset, error) { return tools.NewToolset(ts) }

// OpenAITools returns tools in the OpenAI "tools" array shape.
func OpenAITools(ts []Tool) []map[string]any { return tools.OpenAITools(ts) }

// Errorf returns a *ToolError.
func Errorf(format string, args ...any) error { return tools.Errorf(format, args...) }

// IsToolError reports whether err is (or wraps) a *ToolError, and its message.
func IsToolError(err error) (string, bool) { return tools.IsToolError(err) }
