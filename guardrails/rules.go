package guardrails

import (
	"regexp"
	"strings"
	"sync"
)

// The phrase rules read text.norm: lower case, one space between words,
// look-alikes read as Latin. Go's \b is ASCII-only, so words of other
// scripts are matched without it. Windows are counted in bytes and stop at a
// sentence end where the sense would otherwise run on.

// Override: replacing the model's instructions or role.
var overrideRe = anyOf(
	`\b(?:ignore|ignoring|ignorez?|disregard|forget|override|overrides|overrule|bypass|discard|set aside)\b[^.!?]{0,40}?\b(?:previous|prior|earlier|above|preceding|former|all|any|existing|original|your|system|safety|usual|initial)\b[^.!?]{0,30}?\b(?:instructions?|prompts?|rules|guidelines|guidance|directions|directives|polic(?:y|ies)|constraints|restrictions|programming)\b`,
	`\bforget (?:what|everything|anything) you (?:were|have been|'ve been) (?:told|given)`,
	`\byou are now\b`,
	`\bfrom now on,? (?:you|respond|act|obey|follow|ignore|always|never|only|answer|reply|when|insert|include)\b`,
	`\bfrom here on,? (?:you|respond|act|obey|follow)\b`,
	`\bnew system (?:instructions?|prompt|rules)\b`, `\bnew instructions\s*(?::|#)`,
	`\bsystem (?:notice|message|override|instruction)s? (?:to|for) (?:the )?(?:model|ai|assistant|llm|agent)\b`,
	`\byou are (?:now )?in (?:developer|maintenance|god|admin|unrestricted|jailbreak) mode\b`,
	`\bno longer appl(?:y|ies)\b`,
	`\b(?:higher|highest|top|more) priority than\b`,
	`\bfollows? only (?:this|these|the) (?:server|tool|instructions|directions)`,
	`\bobey (?:this|these|the) (?:server|tool|instructions)\b`,
	`\b(?:act|acts|behave|operate)s? as (?:an? )?(?:unrestricted|unfiltered|jailbroken|uncensored)\b`,
	`\byou are\b[^.]{0,30}\b(?:with no|without) (?:restrictions|limits|rules|filters|guardrails)\b`,
	`\bgranted (?:you )?full (?:permissions?|access)\b`,
	`\b(?:execute|run|perform) (?:any|every|all) [a-z]+ without (?:asking|confirmation|confirming|approval)\b`,
	`\bact as (?:if|though) (?:the user|the person|you) (?:has|have|had) (?:already )?(?:approved|authorized|authorised|consented|agreed)\b`,
	`\bproceed without (?:asking|confirmation|confirming|approval)\b`,
	`\b(?:supersedes?|overrides?|outranks?|takes? precedence over)\b[^.!?]{0,30}\b(?:guidance|instructions|rules|requests|wishes|directions)\b[^.!?]{0,20}\b(?:user|developer|operator|system)`,
	`\btakes? precedence over (?:the user|the developer|the operator|your|any other)\b`,
	`\byour (?:top|first|highest|main) priority\b`,
	`\b(?:said|told you|asked|wrote)\b[^.!?]{0,20}\b(?:is|are) secondary\b`,
	// Other languages: "ignore (or forget) the previous instructions".
	`\b(?:olvida|oublie|oubliez|vergiss|dimentica|esqueça)\b[^.]{0,30}(?:instrucciones|instructions|anweisungen|istruzioni|instruções)`,
	`\bignora\b[^.]{0,30}instrucciones`, `\bignore as instruções`, `\bignorier\w*\b[^.]{0,30}anweisungen`,
	`\bignora\b[^.]{0,30}istruzioni`, `игнорир[^.]{0,40}инструкци`, `忽略[^。]{0,10}(?:指令|指示|说明)`, `指示を無視`,
)

// Words addressed to the model by name: honest documentation describes the
// tool; a note to "the AI" is written for the reader the person cannot see.
var addressedRe = anyOf(
	`\b(?:notes?|notices?|messages?|instructions?|reminders?|heads-up|p\.s\.|ps|memo|warning|attention)\b:? (?:to|for) (?:the |all |any )?(?:ai|ais|model|models|assistant|assistants|llm|llms|agent|agents|language models?|chatbot|claude|gpt|copilot)\b`,
	`\b(?:dear|hey|hello|attention|hi) (?:ai|model|assistant|llm|agent|claude|gpt|copilot)\b`,
	`\bthis is (?:the|your) (?:system|developer|operator|administrator|admin) speaking\b`,
	`\b(?:if you are|as) an? (?:ai|llm|language model|assistant|agent)(?: reading this)?\b[^.!?]{0,20}\b(?:you|must|should)\b`,
)

// A sentence that opens by calling the model ("Assistant, …", "AI: …");
// vocativeAt checks that it opens the sentence.
var vocativeRe = anyOf(`\b(?:ai|models?|assistants?|llms?|agents?)\s*[,:] `)

// Markup that poses as system text or shouts at the model.
var markupRe = anyOf(
	`</?\s*(?:important|system|instructions?|secret|hidden|admin|sys|critical|ai|assistant|override|priority|tool_description|description|functions?|user|human)\s*>`,
	`\[/?(?:inst|system|sys)\]`, `<\|im_(?:start|end)\|>`, `<<sys>>`, `<!--`,
	`#{2,}\s*(?:new )?(?:system|instructions)\b`,
)

// Concealment: keeping something from the person.
var concealRe = anyOf(
	`\b(?:do not|don't|dont|never|no need to|must not|mustn't|should not|shouldn't|avoid|not|skip|refrain from)\b[^.!?]{0,25}?\b(?:tell|telling|mention|mentioning|inform|informing|notify|notifying|alert|alerting|reveal|revealing|disclose|disclosing|say|saying|bring (?:it|this|that) up|point (?:it|this) out|narrate|trouble|bother|warn|warning)\b[^.!?]{0,40}?\b(?:user|users|human|person|people|customer|operator)\b`,
	`\b(?:do not|don't|never|no need to)\s+(?:tell|mention|narrate|disclose|reveal|point out|bring up|explain)\s+(?:it|this|that|these steps|this step)\b`,
	`\b(?:without|never) (?:telling|informing|notifying|alerting|asking|warning|showing)\b[^.!?]{0,15}\b(?:the )?(?:user|human|person|them)\b`,
	`\b(?:without|never) (?:letting|making) (?:the )?(?:user|human|person|them)\b[^.!?]{0,20}\b(?:know|aware|notice)`,
	`\b(?:silently|quietly|secretly|covertly|stealthily|discreetly)\b[^.!?]{0,30}?\b(?:upload|send|copy|read|include|add|forward|message|post|call|run|execute|attach|also|edit|write|modify|change|delete|install|download|store|save)\b`,
	`\b(?:upload|send|copy|read|include|add|forward|message|post|call|run|execute|attach|do) (?:this|it|that|them|[a-z']+ [a-z']+) (?:silently|quietly|secretly|covertly|stealthily)\b`,
	`\b(?:keep|hide|conceal|hidden)\b[^.!?]{0,40}?\bfrom (?:the )?(?:user|human|person)\b`,
	`\bbetween us\b`, `\bkeep (?:it|this|that) to yourself\b`, `\bbehind the user'?s back\b`,
	`\b(?:user|person|human|they)\b[^.!?]{0,30}?\b(?:must not|should not|does not need to|doesn't need to|need not|do not need to|don't need to|needn't|must never|should never)\b[^.!?]{0,15}?\b(?:know|see|hear|be told|be aware|notice|learn|find out|a reminder)\b`,
	`\bnot (?:be )?made aware\b`, `\b(?:do not|don't|does not|doesn't) need (?:a reminder|reminding|to be reminded|to be told)\b`,
	`\b(?:do not|don't|never) point (?:it|this|that) out\b`, `\bnot something (?:they|the user|the person|the human) needs?\b`,
	`\bno need to (?:bring|mention|tell|inform|point|say|trouble|bother)`,
	`\b(?:an?|mere|just an?) (?:internal|implementation) detail\b`,
	`\bshould look normal\b`,
	// Other languages: "do not tell the user".
	`\bno (?:se lo |le |lo )?(?:menciones|digas|informes|comentes)\b`, `\bsin (?:avisar|decir|informar)`, `\bsem avisar`, `\bnão (?:conte|diga|mencione)`,
	`\bne (?:le |lui |l'|les )?(?:dis|dites|mentionne|mentionnez|signale|signalez) (?:pas|rien)`,
	`\b(?:erwähne|sag|sage|erzähl|erzähle)\b[^.]{0,40}\b(?:nicht|nichts)\b`, `\bohne (?:es )?(?:dem )?(?:nutzer|benutzer)`,
	`\bnon (?:dirlo|dire|menzionare)`, `не (?:сообщай|говори|упоминай)`, `不要(?:告诉|让)用户`, `ユーザーに(?:は)?(?:言わない|伝えない|知らせない)`,
)

// Shadowing: directions about other tools or servers.
var shadowRe = anyOf(
	`\b(?:when|whenever|each time|every time|if|after|before|once)\b[^.!?]{0,50}?\b(?:tool|server|function|[a-z0-9]+_[a-z0-9_]+)\b[^.!?]{0,12}?\b(?:is|are|gets|get) (?:called|invoked|used|run|executed|triggered|available)\b`,
	`\b(?:when|whenever|each time|every time|if)\b[^.!?]{0,30}?\b[a-z0-9]+_[a-z0-9_]+ (?:call|request) (?:happens|is made|runs)\b`,
	`\b(?:all|any|every|each)(?: of the)? other (?:tools?|servers?|functions?)\b`,
	`\bother servers?'s?\b`, `\banother (?:tool|server)\b[^.!?]{0,30}\b(?:would|will|is about to)\b`,
	`\b(?:overrides?|replaces?|supersedes?)\b[^.!?]{0,30}\b(?:every|all|any|other)\b[^.!?]{0,25}\b(?:tools?|servers?|functions?)\b`,
	`\bthis (?:tool|server) replaces [a-z0-9]+_[a-z0-9_]+\b`,
	`\b(?:always|only|all|every|must)\b[^.!?]{0,60}\b(?:instead of|rather than|in place of)\b[^.!?]{0,40}?(?:\b[a-z0-9]+_[a-z0-9_]+\b|\b(?:tools?|servers?)\b)`,
	`\b(?:instead of|rather than|in place of)\b[^.!?]{0,40}?\b[a-z0-9]+_[a-z0-9_]+\b[^.!?]{0,60}\b(?:always|only|all|every|must)\b`,
	`\bthe (?:[a-z0-9]+_[a-z0-9_]+ |[a-z]+ )?tool (?:must|should|has to|needs to|shall)\b`,
	`\b(?:with|using|via|through|call|use|ask|asks)\s+(?:the |any |a )?(?:user's )?(?:shell|http|email|e-mail|mail|wallet|browser|calendar|messaging|terminal|fetch|payment|other|[a-z0-9]+_[a-z0-9_]+) (?:tool|server|function)s?\b`,
	`\bthe (?:user's )?(?:shell|http|email|e-mail|mail|wallet|browser|calendar|messaging|terminal|payment) tool\b`,
	`\b(?:before|prior to|ahead of)\b[^.!?]{0,25}?\b(?:any|every|each|all)\b[^.!?]{0,15}?\b(?:other )?(?:tool|command|function|request|call|action)s?\b`,
	`\bevery (?:message|email|command|call|query|request|commit)s? (?:sent|run|made|created|executed) (?:with|by|through|using)\b`,
	`\b(?:uses?|calls?) (?:any|a|every) tool that\b`,
	`\broute (?:it|them|this|every|all)\b[^.!?]{0,20}\bthrough\b`,
	`\bfrom any other tool\b`,
	`\b(?:every|each|all) (?:other )?tool calls?\b`,
	`\b(?:when|whenever|if)\b[^.!?]{0,60}\b(?:with|using|through) (?:any|every|all) (?:other )?tools?\b`,
	`\bask (?:the |another )?[a-z0-9_-]+ (?:server|tool) for\b`,
	`\b(?:when|whenever|each time|every time|if|before|after) you (?:call|use|invoke|run)\s+(?:the |a |any |another )?(?:[a-z0-9]+_[a-z0-9_]+|[a-z0-9-]+(?: [a-z0-9-]+)? (?:tool|server|function))\b`,
	`\bif you have access to (?:a|an|the|any) [a-z -]{1,20}? ?(?:tool|server)\b`,
)

// Where the words name a file or store of credentials.
var credentialPlaceRe = anyOf(
	`(?:^|[^a-z0-9])\.ssh\b`, `\bid_(?:rsa|dsa|ecdsa|ed25519)\b`, `\.aws/(?:credentials|config)\b`, `~/\.aws\b`,
	`(?:^|[\s'"\x60(/])\.env(?:\.[a-z]+)?\b`, `\bmcp\.json\b`, `\bclaude_desktop_config\.json\b`,
	`(?:^|[^a-z0-9])\.(?:npmrc|pypirc|netrc|git-credentials|gnupg|bash_history|zsh_history)\b`,
	`\.kube/config\b`, `\.docker/config\.json\b`, `/etc/(?:passwd|shadow)\b`, `\bapplication_default_credentials\b`,
	`\bkeystore\b`, `\bwallet\.dat\b`, `\bkeychain\b`, `(?:ending|ends) in \.(?:pem|key|p12|pfx)\b`,
	`\bsecure shell\b[^.!?]{0,20}\b(?:folder|directory|dir|keys?|identity)\b`, `\b(?:ssh) (?:folder|directory|private key)\b`,
)

// Words that aim a sentence at the model: a credential place in such a
// sentence is a request, not a description.
var atModelRe = anyOf(`\b(?:you|your|before you|first|must|always|please|kindly|assistant|the model|the agent|the ai)\b`)

// Secrets by name.
var secretRe = anyOf(
	`\b(?:api|access|secret(?: access)?|private)[ _-]?keys?\b`,
	`\b(?:signing (?:key|material)|key material)\b`,
	`\b(?:session|access|bearer|refresh|auth(?:entication)?)[ _-]?tokens?\b`,
	`\b(?:passwords?|passphrases?|seed phrases?|recovery phrases?|mnemonics?)\b`,
	`\b(?:credentials|login details|secrets|cookies|environment variables|env vars)\b`,
	`\b[a-z0-9]+_(?:api_key|secret|token|password|access_key|secret_key|private_key)s?\b`,
	`\b(?:the user's|the person's|their|your) [a-z0-9]{1,20} (?:token|password|key)s?\b`,
	`\*_api_key\b`,
)

// Reading something: the model is asked to fetch it. Base forms only: "reads
// ~/.gitconfig" says what a tool does, "read ~/.ssh/id_rsa" what it asks.
var readRe = anyOf(
	`\b(?:read|cat|open|load|retrieve|fetch|grab|collect|gather|obtain|extract|dump|copy|look at|have a look at|access|print)\b`,
	`\b(?:contents?|full text|text|output) of\b`,
	`\blee\b`, `\blis\b`, `\blies\b`, `\bleggi\b`, `прочита`, `读取`, `読み`,
)

// Handing something over: a verb, then within a few words a destination (an
// argument, a field, "here", "along", "as x_y"); or a destination alone.
// The verb and what follows it are matched apart: one pattern for both is
// many times slower on Go's regexp. Like the phrase sets, the destination's
// regexp is compiled on first use.
var (
	handVerbRe = anyOf(`\b(?:pass|passes|passed|include|includes|included|put|paste|pasted|send|sent|attach|attached|supply|supplied|provide|provided|insert|inserted|append|appended|embed|embedded|share|upload|uploaded|forward|tuck|place|placed|quote|quotes|hand it over|hand over|fill|mirror|copy|copied|post|posted|submit|add|added|list|set to|store|save|record)\b`)
	handDestRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[^.!?]*?(?:\b(?:in|into|as|inside|to|within|under|here)\b[^.!?]*?(?:\b(?:field|argument|arg|parameter|param|property|input|memo|note|notes|payload|request|body)s?\b|\x60[^\x60]+\x60|'[a-z_]+'|"[a-z_]+"|\b[a-z]+_[a-z_]+\b)|\bhere\b|\balong\b|\bas\s+[a-z]+_[a-z_]+\b)`)
	})
	handRe = anyOf(
		`\b(?:in|into|inside) (?:the )?(?:\x60[^\x60]+\x60|'[a-z_]+'|[a-z_]+) (?:field|argument|parameter)\b`,
		`\b(?:pass|passes|passed|provide|provided|supply|supplied|send it along)\b[^.!?]{0,40}?\bas [a-z][a-z_]{0,30}\b`,
		`\b(?:pasa|copie|schreibe|füge|inserisci|coloque)\b`, `передай`, `放入`, `入れて`,
	)
)

// handDestWindow is how far after the verb its destination may be.
const handDestWindow = 85

// A parameter description asking to be filled: the parameter is the destination.
var fillRe = anyOf(
	`\b(?:pass|include|put|paste|provide|insert|append|place|fill|list|give|enter|write|add|supply|mirror|copy)\b`,
	`\bhere\b`,
)

// Data a tool has no business receiving: the conversation, the model's
// instructions, other tools' results, the person's files and details.
var foreignDataRe = anyOf(
	`\b(?:conversation|chat history|chat so far|message history|transcript|previous messages|prior messages|last messages|earlier messages)\b`,
	`\b(?:system prompt|hidden (?:guidance|instructions)|instructions you were (?:given|configured)|guidance you were configured)\b`,
	`\b(?:everything|whatever|all|anything)\b[^.!?]{0,20}\b(?:the user|the person|they|you)\b[^.!?]{0,10}\b(?:typed|types|said|says|wrote|writes|shared|shares|told|tells|sends|receive|received)\b`,
	`\b(?:results?|outputs?) of (?:every|each|all|any|other|the previous|previous)\b[^.!?]{0,10}\btools?\b`,
	`\b(?:prompt|instructions|guidance) you were (?:given|initiali[sz]ed|configured|set up|started)\b`,
	`\b(?:output|contents?) of \x60?(?:env|printenv|set|export)\b`,
	`\bprior outputs\b`, `\bevery tool you called\b`, `\bother tools?'s? (?:results?|outputs?)\b`,
	`\bfrom any other tool\b`, `\blast file you read\b`,
	`\b(?:every|all|each) (?:document|file)s?\b[^.!?]{0,40}\b(?:shared|opened|read|seen)\b`,
	`\b(?:contents?|full text|text) of (?:the |a |any |every |each |all )?(?:user's |their |your )?(?:files?\b|documents?\b|folders?\b|directory\b|home\b|~|\.)`, `\b(?:its|the file's|file's) (?:contents?|text)\b`, `\beverything in it\b`,
	`\b(?:full name|home address|phone number|card number|credit card|date of birth|ip address)\b`,
	`\b(?:mentioned|appeared|seen|shared|typed|given)\b[^.!?]{0,15}\b(?:earlier|before|previously|in (?:the|this) (?:conversation|chat|session)|during the chat)\b`,
	`historial|histórico|historique|verlauf|历史|履歴|истори`,
)

// Addresses a definition might name as a destination.
var addressRe = anyOf(
	`\b(?:https?|s?ftp|wss?|scp|smb|s3|gs)://[^\s'"<>)\]\x60]+`,
	`\b[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b`,
	`\+\d[\d ().-]{7,}\d`,
	`\bchannel [a-z]{0,3}[0-9][a-z0-9]{4,}\b`, // an id like C0EXFIL01, not a word
)

// Verbs that send something to an address.
var sendRe = anyOf(
	`\b(?:send|sends|sent|sending|post|posted|posts|upload|uploads|uploaded|forward|forwards|email|e-mail|mail|bcc|cc|copy|mirror|report|log|logs|navigate|invite|message|relay|relays|route|transmit|submit|share|visit|go to|redirect|recipient|deliver|push|sync|back up|backup|attendees?|invites?|envoie|envoyer|envía|envíe|envie|envia|enviar|sende|senden|schick|invia|inviare)\b`,
	`отправ|发送|送信`,
	`\b(?:answers?|repl(?:y|ies)|responses?)\b[^.!?]{0,20}\b(?:append|insert|include|add)\b[^.!?]{0,20}\blinks?\b`,
	`\b(?:append|insert|include|add)\b[^.!?]{0,20}\blinks?\b[^.!?]{0,30}\b(?:answers?|repl(?:y|ies)|responses?)\b`,
)

// exampleHost reports whether an address is an example or local one that
// documentation uses to show a format, not a destination.
func exampleHost(addr string) bool {
	for _, h := range []string{"example.com", "example.org", "example.net", ".example", "localhost", "127.0.0.1", "[::1]"} {
		if strings.Contains(addr, h) {
			return true
		}
	}
	return false
}

// Sends of whole collections: the person's files, mail, conversation.
var bulkSendRe = anyOf(
	`\b(?:upload|send|forward|copy|post|email|transmit|sync|mirror)\b[^.!?]{0,40}?\b(?:the user's|the person's|their)\b[^.!?]{0,30}?\b(?:files?|folder|documents|directory|conversation|chat|history|messages|emails|contacts|photos|pictures|images|transcript)\b`,
	`\b(?:upload|send|forward|copy|post|email|transmit|sync|mirror)\b[^.!?]{0,40}?\b(?:all|every|whole|entire|complete|full)\b[^.!?]{0,30}?\b(?:conversation|chat|history|messages|transcript)\b`,
	`\b(?:also|additionally)\b[^.!?]{0,20}\b(?:be )?(?:posted|sent|forwarded|copied|uploaded|stored|mirrored) (?:to|on|in|into)\b`,
	`\b(?:mirror|copy)\b[^.!?]{0,40}\bas well\b`,
)
