package lsp

import (
	"context"
	"encoding/json"
	"strings"
)

// defaultHandlers answer the server-to-client requests every server may send. Registration
// requests get a null success: gopls treats an error there as fatal.
func (c *Client) defaultHandlers() map[string]RequestHandler {
	null := func(context.Context, json.RawMessage) (any, error) { return nil, nil }
	return map[string]RequestHandler{
		"workspace/configuration":        c.configuration,
		"window/workDoneProgress/create": null,
		"client/registerCapability":      null,
		"client/unregisterCapability":    null,
		"window/showMessageRequest":      null,
		"window/showDocument": func(context.Context, json.RawMessage) (any, error) {
			return map[string]bool{"success": false}, nil
		},
		"workspace/diagnostic/refresh":     null,
		"workspace/semanticTokens/refresh": null,
		"workspace/inlayHint/refresh":      null,
		"workspace/codeLens/refresh":       null,
		"workspace/applyEdit": func(context.Context, json.RawMessage) (any, error) {
			return ApplyEditResult{Applied: false, FailureReason: "this client applies no edits (put lsp.ApplyEditHandler in lsp.Config.Handlers[\"workspace/applyEdit\"] to apply them)"}, nil
		},
		"workspace/workspaceFolders": func(context.Context, json.RawMessage) (any, error) {
			return c.folders(), nil
		},
	}
}

// ApplyEditResult is the answer to workspace/applyEdit.
type ApplyEditResult struct {
	Applied       bool   `json:"applied"`
	FailureReason string `json:"failureReason,omitempty"`
	FailedChange  *int   `json:"failedChange,omitempty"`
}

// configuration answers workspace/configuration from Config.Settings, one result per item.
func (c *Client) configuration(_ context.Context, params json.RawMessage) (any, error) {
	var p struct {
		Items []struct {
			ScopeURI string `json:"scopeUri"`
			Section  string `json:"section"`
		} `json:"items"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &RPCError{Code: CodeInvalidParams, Message: "workspace/configuration: " + err.Error()}
	}
	out := make([]any, len(p.Items))
	for i, it := range p.Items {
		out[i] = lookupSetting(c.cfg.Settings, it.Section)
	}
	return out, nil
}

// lookupSetting finds section in settings: as a key, else as a dotted path through nested
// maps; the whole map for an empty section; nil when absent.
func lookupSetting(settings map[string]any, section string) any {
	if settings == nil {
		return nil
	}
	if section == "" {
		return settings
	}
	if v, ok := settings[section]; ok {
		return v
	}
	var cur any = settings
	for part := range strings.SplitSeq(section, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		if cur, ok = m[part]; !ok {
			return nil
		}
	}
	return cur
}
