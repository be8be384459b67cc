// Package guardrails scans MCP tool definitions for words aimed at the model
// rather than the person: the tool poisoning, shadowing and rug pulls that
// approval alone lets through when a reviewer skims hundreds of descriptions.
//
// Scan reads a definition as Warden pins it (the canonical JSON of
// approval.ToolRecord.Current) and returns findings, each with a stable rule
// id, a severity, the field and the words that raised it. Changed compares
// two versions of one tool for a rug pull. Both run offline: no network, no
// model, only word patterns and character checks, so they explain themselves
// and cost microseconds. The patterns compile on the first Scan or Changed
// (tens of milliseconds and 7 MB, once), not when the package loads, so a
// process that scans nothing, every warden command but the daemon, pays
// nothing for them.
//
// Rules (ids are stable; the API, events and the review page carry them):
//
//	instruction-override  high    words that try to replace the model's instructions or
//	                              role ("ignore previous instructions", "you are now…")
//	addressed-to-model    medium  words written to the model by name ("Note to the AI:",
//	                              "Dear model", "this is the system speaking")
//	prompt-markup         medium  chat-template or emphasis tags that pose as system text
//	                              (<IMPORTANT>, <system>, [INST], <|im_start|>)
//	conceal-from-user     high    asks the model to hide something from the person
//	                              ("do not tell the user", "silently", "keep it to yourself")
//	credential-access     high    asks for keys, tokens, passwords or credential files
//	                              (~/.ssh, id_rsa, .env, .aws/credentials, mcp.json…) to be
//	                              read or handed over
//	exfiltration          high    asks for data the tool's job does not need (the
//	                              conversation, the system prompt, other tools' results,
//	                              files) to be put in an argument, or for anything to be
//	                              sent to an address written in the definition
//	tool-shadowing        high    tells the model how to use other tools or servers
//	                              ("when send_email is called, also…", "instead of any
//	                              other tool")
//	invisible-characters  high    tag, bidi, zero-width or control characters a reviewer
//	                              cannot see; medium for a few zero-width ones
//	lookalike-characters  medium  words that mix Latin with Cyrillic or Greek look-alikes
//	                              (high in a tool or parameter name)
//	instructions-added    high    (Changed only) a new version adds directions to the
//	                              model that its old text did not give
//
// Text hidden in tag characters is decoded and scanned too, and look-alike
// letters are read as the Latin ones they imitate, so hiding the words does
// not hide them from the other rules.
//
// # Secrets kept out of calls
//
// FindSecrets reads a tool call's arguments for credentials, and
// MaskSecrets blanks them in a text (an error an activity entry keeps). The
// formats are gitleaks' default rule set (github.com/zricethezav/gitleaks/v8
// v8.30.1, MIT licence: GITLEAKS-LICENSE), about 220 maintained patterns for
// cloud keys, service tokens, private keys and JWTs, each with its keywords,
// entropy bound and allowlists. Its file gitleaks.toml is embedded as the
// module ships it (a test checks it byte for byte against the module) and
// read with go-toml: importing the module's config package would link
// viper, zerolog and a dozen more modules into Warden for one string. Left
// out: its generic-api-key rule, which reads "name = value" in free text;
// instead a value is a secret by place (RuleSecretParam) when its
// parameter's name says so and it is varied enough.
//
// The rules load on first use (about 30 ms, once); a rule's regexp is
// compiled the first time a text holds one of its keywords, found by one
// Aho-Corasick pass, and runs only over the part of the text a match
// holding them can span. A typical call's check costs a few microseconds,
// and at most MaxSecretScan bytes of a call's strings are read.
package guardrails
