package config

import "maps"

// claudeDesktopOwn is the note for the top-level fields Claude Desktop
// keeps in claude_desktop_config.json beside its servers.
const claudeDesktopOwn = "Claude Desktop's own setting, not a server's"

// foreignTop are the top-level fields other MCP hosts keep in their files
// for their own purposes, each with the note Warden logs when it ignores
// one. A top-level field in neither this table nor Warden's is an error.
var foreignTop = map[string]string{
	"inputs": "VS Code's prompts for ${input:...} values, which Warden cannot show; use ${env:NAME}",

	// As Claude Desktop writes them (its app's config schema).
	"globalShortcut": claudeDesktopOwn, "preferences": claudeDesktopOwn, "features": claudeDesktopOwn,
	"isUsingBuiltInNodeForMcp": claudeDesktopOwn, "isDxtAutoUpdatesEnabled": claudeDesktopOwn,
	"dxtMaxTotalSizeMB": claudeDesktopOwn, "isHardwareAccelerationDisabled": claudeDesktopOwn,
	"isHardwareAccelerationAutoDisabled": claudeDesktopOwn, "isHardwareAccelerationAutoDisableNoticePending": claudeDesktopOwn,
	"isCoworkSdkDebuggingEnabled": claudeDesktopOwn, "deploymentMode": claudeDesktopOwn, "awaitingSignIn": claudeDesktopOwn,
	"managedConfig": claudeDesktopOwn, "coworkUserFilesPath": claudeDesktopOwn, "coworkUserFilesPathUncRedirectedFrom": claudeDesktopOwn,
	"claudeAiUrl": claudeDesktopOwn, "lastRemoteBootstrapPartial": claudeDesktopOwn, "lastRemoteBootstrapHost": claudeDesktopOwn,
	"lastRemoteDisableEssentialTelemetry": claudeDesktopOwn, "lastRemoteDisableEssentialTelemetryHost": claudeDesktopOwn,
}

// foreignServer are the fields of a server entry that other MCP hosts use
// for their own purposes, with their notes, as foreignTop.
var foreignServer = map[string]string{
	"autoApprove": "Cline's list of tools it calls without asking; Warden approves tools with warden review",
	"alwaysAllow": "Roo Code's list of tools it calls without asking; Warden approves tools with warden review",
	"dev":         "VS Code's settings for debugging a server it develops",
	"extensionId": "Claude Desktop's mark of a server one of its extensions installed",
}

// importedPolicy are Warden's own fields of a server entry that widen what
// the server may do or spare it review. A file being imported does not set
// them: a project's .mcp.json comes with the repository, or from a server
// that writes in its cwd, and an imported server runs (quarantined) at
// once. Each is ignored with its note, for the operator to set in Warden's
// config if meant.
var importedPolicy = map[string]string{
	"trusted":    "Warden's own: an imported server starts quarantined; admit it with warden servers approve NAME",
	"tools":      "Warden's own overrides of its tools' classes and records; set them in Warden's config (\"disabledTools\" is copied)",
	"guardrails": "Warden's own: calls whose arguments carry a credential are refused unless Warden's config allows them",
	"sandbox":    "Warden's own: an imported server writes only to its own places until Warden's config widens that",
	"inheritEnv": "Warden's own: an imported server gets a minimal environment, not Warden's; name variables in Warden's config",
}

// importedServer is what a server entry of a file being imported ignores:
// the other hosts' own fields and Warden's policy.
var importedServer = func() map[string]string {
	m := maps.Clone(foreignServer)
	maps.Copy(m, importedPolicy)
	return m
}()
