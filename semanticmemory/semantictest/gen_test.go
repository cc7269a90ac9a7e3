package semantictest

// The generator of the evaluation set. testdata/facts.jsonl and
// testdata/queries.jsonl are its output, checked by
// TestMemory58_SetIsGenerated; after changing this file, rewrite them with
//
//	go test -run TestMemory58 -update ./semanticmemory/semantictest/

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

type user struct{ id, name string }

var users = []user{
	{"alice", "Alice Moreau"}, {"bob", "Bob Okafor"}, {"chen", "Chen Wei"}, {"dana", "Dana Kowalski"},
	{"emeka", "Emeka Obi"}, {"farah", "Farah Haddad"}, {"gustavo", "Gustavo Lima"}, {"hana", "Hana Sato"},
	{"ivan", "Ivan Petrov"}, {"julia", "Julia Berg"},
}

type site struct{ id, name, domain string }

var sites = []site{
	{"northwind", "the Northwind Travel blog", "travel.northwind.example"},
	{"acme", "the Acme Docs portal", "docs.acme.example"},
	{"harbor", "the Harbor Cafe site", "harborcafe.example"},
	{"lumen", "the Lumen Museum microsite", "lumen-museum.example"},
	{"atlas", "the Atlas Careers page", "careers.atlas.example"},
	{"beacon", "the Beacon Newsroom", "news.beacon.example"},
	{"orbit", "the Orbit Product store", "shop.orbit.example"},
	{"cedar", "the Cedar School intranet", "intranet.cedar.example"},
}

// A dimension is one attribute every user (or site) has: a value drawn
// from values, said in one of several phrasings, asked about by one of
// several questions. {s} is the subject's name, {v} the value.
type dimension struct {
	key, kind string
	values    []string
	phrasings []string
	questions []string
}

var userDims = []dimension{
	{"theme", "preference", []string{"dark mode", "light mode", "high-contrast mode", "sepia mode"},
		[]string{"{s} prefers {v} in the content editor.", "{s} always switches the editor to {v}.", "In the editor, {s} works in {v}."},
		[]string{"Which editor theme does {s} like?", "Does {s} use a dark or light editor?"}},
	{"notify", "preference", []string{"email digests", "Slack messages", "SMS alerts", "in-app notifications"},
		[]string{"{s} wants publishing notifications as {v}.", "Notify {s} about publishing through {v}.", "{s} asked to receive publish alerts via {v}."},
		[]string{"How should {s} be notified about publishing?", "Which channel does {s} want for notifications?"}},
	{"quiet", "preference", []string{"after 18:00", "before 08:00", "at weekends", "during lunch", "on Friday afternoons"},
		[]string{"Do not message {s} {v}.", "{s} does not want to be disturbed {v}."},
		[]string{"When should nobody disturb {s}?", "At what times must we not message {s}?"}},
	{"dates", "preference", []string{"ISO 8601", "day/month/year", "US month-first", "DD.MM.YYYY", "written-out months"},
		[]string{"{s} writes dates as {v}.", "Dates in drafts by {s} use the {v} format."},
		[]string{"What date format does {s} use?", "How does {s} write dates?"}},
	{"language", "preference", []string{"French", "German", "Spanish", "Japanese", "Portuguese", "Polish"},
		[]string{"{s} uses the CMS interface in {v}.", "The dashboard language of {s} is {v}."},
		[]string{"In which language does {s} see the CMS?", "What interface language has {s} chosen?"}},
	{"autosave", "preference", []string{"every 30 seconds", "every minute", "every two minutes", "every five minutes", "every ten minutes"},
		[]string{"{s} set draft autosave to run {v}.", "Autosave runs {v} for drafts of {s}."},
		[]string{"How often are drafts of {s} autosaved?", "What autosave interval did {s} set?"}},
	{"images", "preference", []string{"WebP", "PNG", "AVIF", "JPEG", "GIF"},
		[]string{"{s} exports hero images as {v}.", "{s} uploads pictures in {v} format."},
		[]string{"Which image format does {s} upload?", "In what format does {s} export images?"}},
	{"review", "preference", []string{"tracked changes", "inline comments", "side-by-side diffs", "suggestion mode", "printed proofs"},
		[]string{"{s} reviews drafts with {v}.", "When reviewing, {s} prefers {v}."},
		[]string{"How does {s} like to review drafts?", "What review style does {s} prefer?"}},
	{"meetings", "preference", []string{"mornings", "early afternoons", "late afternoons", "lunchtime", "Thursday afternoons"},
		[]string{"{s} prefers editorial meetings in the {v}.", "Book content meetings with {s} for {v}."},
		[]string{"When can meetings with {s} be scheduled?", "What time of day suits {s} for meetings?"}},
	{"editor", "preference", []string{"Markdown editor", "visual block editor", "raw HTML editor", "split-screen editor", "plain text editor"},
		[]string{"{s} writes pages in the {v}.", "{s} drafts articles with the {v}."},
		[]string{"Which editing mode does {s} write in?", "What kind of editor does {s} draft with?"}},
	{"tone", "preference", []string{"formal", "friendly", "playful", "neutral", "warm"},
		[]string{"{s} wants AI suggestions in a {v} tone.", "Suggested copy for {s} should sound {v}."},
		[]string{"What tone should suggestions for {s} have?", "How should suggested copy sound for {s}?"}},
	{"summaries", "preference", []string{"one sentence", "three bullet points", "a short paragraph", "a numbered list", "a single headline"},
		[]string{"{s} likes change summaries as {v}.", "Summaries of changes for {s} should be {v}."},
		[]string{"How long should change summaries for {s} be?", "In what shape does {s} want summaries?"}},
	{"spelling", "preference", []string{"British spelling", "American spelling", "Canadian spelling", "Australian spelling", "Oxford spelling"},
		[]string{"{s} uses {v} in copy.", "Copy edited by {s} follows {v}."},
		[]string{"Which spelling does {s} follow?", "Does {s} spell the British or American way?"}},
	{"publishtime", "preference", []string{"07:00", "09:00", "12:00", "15:00", "17:00"},
		[]string{"{s} schedules posts to go out at {v}.", "Articles by {s} are usually published at {v}."},
		[]string{"At what time does {s} schedule posts?", "When do articles by {s} usually publish?"}},
	{"preview", "preference", []string{"a phone", "a tablet", "a desktop browser", "a laptop", "a large monitor"},
		[]string{"{s} previews pages on {v} first.", "Before publishing, {s} checks the preview on {v}."},
		[]string{"On which device does {s} preview pages?", "Where does {s} check previews?"}},
	{"stock", "preference", []string{"Unsplash", "the in-house photo library", "Getty Images", "Pexels", "Adobe Stock"},
		[]string{"{s} picks images from {v}.", "Photos chosen by {s} come from {v}."},
		[]string{"Where does {s} get images from?", "Which photo source does {s} use?"}},
	{"role", "account", []string{"admin", "editor", "author", "reviewer", "viewer"},
		[]string{"{s} has the {v} role in the CMS.", "The CMS account of {s} is a {v} account."},
		[]string{"What role does {s} have?", "Which CMS role is {s} given?"}},
	{"twofactor", "account", []string{"an authenticator app", "a hardware security key", "SMS codes", "passkeys", "email codes"},
		[]string{"{s} signs in with two-factor via {v}.", "Two-factor for {s} uses {v}."},
		[]string{"Which two-factor method does {s} use?", "How does {s} pass two-factor?"}},
	{"sso", "account", []string{"Google Workspace", "Okta", "Microsoft Entra", "a plain password", "GitHub"},
		[]string{"{s} logs in through {v}.", "Single sign-on for {s} goes through {v}."},
		[]string{"How does {s} log in?", "Which sign-on provider does {s} use?"}},
	{"timezone", "account", []string{"Europe/Paris", "Europe/Berlin", "America/New_York", "Asia/Tokyo", "Africa/Lagos", "America/Sao_Paulo"},
		[]string{"The account timezone of {s} is {v}.", "{s} has the timezone set to {v}."},
		[]string{"What timezone is {s} in?", "Which timezone does the account of {s} use?"}},
	{"team", "account", []string{"Marketing", "Docs", "Editorial", "Design", "Support", "Growth"},
		[]string{"{s} belongs to the {v} team.", "{s} is a member of the {v} group."},
		[]string{"Which team is {s} in?", "What group does {s} belong to?"}},
	{"view", "account", []string{"calendar view", "list view", "kanban board", "gallery view", "timeline view"},
		[]string{"The dashboard of {s} opens on the {v}.", "{s} starts the day in the {v} of the dashboard."},
		[]string{"Which view does the dashboard of {s} open on?", "What dashboard view does {s} start in?"}},
	{"joined", "account", []string{"January 2021", "June 2021", "March 2022", "October 2022", "February 2023", "September 2024"},
		[]string{"{s} joined the workspace in {v}.", "The workspace account of {s} was created in {v}."},
		[]string{"When did {s} join the workspace?", "Since when has {s} had an account?"}},
	{"signoff", "person", []string{"Best", "Cheers", "Kind regards", "Thanks", "Warmly"},
		[]string{"{s} signs emails with \"{v}\".", "Emails from {s} end with \"{v}\"."},
		[]string{"How does {s} sign emails?", "What closing do emails from {s} use?"}},
	{"city", "person", []string{"Lyon", "Berlin", "Lagos", "Kraków", "São Paulo", "Osaka", "Toronto", "Dublin"},
		[]string{"{s} is based in {v}.", "{s} works remotely from {v}."},
		[]string{"Where is {s} based?", "Which city does {s} work from?"}},
	{"leave", "person", []string{"4 to 15 August", "22 December to 2 January", "10 to 21 June", "1 to 12 April", "15 to 26 July"},
		[]string{"{s} is out of office from {v}.", "{s} takes holidays from {v}."},
		[]string{"When is {s} out of office?", "When is {s} on holiday?"}},
	{"anniversary", "person", []string{"January", "March", "May", "July", "November"},
		[]string{"{s} celebrates a work anniversary in {v}.", "The work anniversary of {s} falls in {v}."},
		[]string{"When is the work anniversary of {s}?", "In which month does {s} celebrate a work anniversary?"}},
}

var siteDims = []dimension{
	{"launch", "project", []string{"14 March", "2 May", "19 June", "8 September", "3 November"},
		[]string{"{s} launches on {v}.", "The public launch of {s} is set for {v}."},
		[]string{"When does {s} launch?", "What is the launch date of {s}?"}},
	{"region", "project", []string{"eu-west", "eu-central", "us-east", "ap-northeast"},
		[]string{"{s} is hosted in the {v} region.", "Servers for {s} run in {v}."},
		[]string{"Which region hosts {s}?", "Where are the servers of {s}?"}},
	{"cdn", "project", []string{"Cloudflare", "Fastly", "CloudFront", "Akamai"},
		[]string{"{s} serves assets through {v}.", "Static files of {s} are delivered by {v}."},
		[]string{"Which CDN serves {s}?", "Who delivers the static files of {s}?"}},
	{"locale", "project", []string{"en-GB", "fr-FR", "de-DE", "es-ES", "ja-JP"},
		[]string{"The default locale of {s} is {v}.", "{s} defaults to the {v} locale."},
		[]string{"What is the default locale of {s}?", "Which locale does {s} default to?"}},
	{"plan", "project", []string{"Starter", "Team", "Business", "Enterprise"},
		[]string{"{s} is on the {v} plan.", "The subscription of {s} is the {v} tier."},
		[]string{"Which plan is {s} on?", "What subscription tier does {s} have?"}},
	{"analytics", "project", []string{"Plausible", "Matomo", "Google Analytics 4", "Fathom"},
		[]string{"{s} tracks visits with {v}.", "Visitor statistics for {s} come from {v}."},
		[]string{"What analytics tool does {s} use?", "How are visits to {s} tracked?"}},
	{"budget", "project", []string{"12,000", "18,500", "25,000", "40,000"},
		[]string{"The 2026 content budget for {s} is {v} euros.", "{s} may spend {v} euros on content in 2026."},
		[]string{"What is the content budget of {s}?", "How much may {s} spend on content?"}},
	{"redesign", "project", []string{"30 January", "15 April", "31 July", "1 October"},
		[]string{"The redesign of {s} is due on {v}.", "{s} must ship its redesign by {v}."},
		[]string{"When is the redesign of {s} due?", "What is the redesign deadline for {s}?"}},
	{"wordlimit", "project", []string{"600", "900", "1,200", "2,000"},
		[]string{"Articles on {s} must stay under {v} words.", "{s} caps articles at {v} words."},
		[]string{"What is the word limit for articles on {s}?", "How long may articles on {s} be?"}},
	{"backups", "project", []string{"hourly", "twice a day", "nightly", "weekly"},
		[]string{"{s} is backed up {v}.", "Backups of {s} run {v}."},
		[]string{"How often is {s} backed up?", "What is the backup schedule of {s}?"}},
	{"comments", "project", []string{"disabled", "open to everyone", "limited to signed-in readers", "pre-moderated"},
		[]string{"Comments on {s} are {v}.", "Reader comments on {s} are {v}."},
		[]string{"Are comments allowed on {s}?", "What is the comment policy of {s}?"}},
	{"keyword", "project", []string{"city breaks", "API reference", "brunch near me", "modern art", "remote jobs", "local news", "smart lamps", "parent portal"},
		[]string{"The main SEO keyword of {s} is \"{v}\".", "{s} targets the search term \"{v}\"."},
		[]string{"Which SEO keyword does {s} target?", "What search term is {s} optimised for?"}},
	{"styleguide", "project", []string{"Chicago", "AP", "house", "Microsoft"},
		[]string{"{s} follows the {v} style guide.", "Copy on {s} is edited to the {v} style guide."},
		[]string{"Which style guide does {s} follow?", "What style guide applies to {s}?"}},
	{"newsletter", "project", []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"},
		[]string{"{s} sends its newsletter every {v}.", "The newsletter of {s} goes out on {v}."},
		[]string{"On which day does {s} send its newsletter?", "When does the newsletter of {s} go out?"}},
	{"contact", "project", nil,
		[]string{"{v} is the main contact for {s}.", "Questions about {s} go to {v}."},
		[]string{"Who is the contact for {s}?", "Whom should I ask about {s}?"}},
	{"domain", "project", nil,
		[]string{"{s} lives at {v}.", "The address of {s} is https://{v}/."},
		[]string{"What is the domain of {s}?", "At which address is {s} served?"}},
}

// A decision is taken for some sites; key names it in a question.
type decision struct{ id, text, key string }

var decisions = []decision{
	{"amp", "drop AMP pages", "AMP pages"},
	{"cdnimages", "move all images to the CDN", "images on the CDN"},
	{"tworeviewers", "require two reviewers before publishing", "the number of reviewers"},
	{"freeze", "freeze homepage changes until the launch", "homepage changes"},
	{"newsletter", "switch the newsletter to a weekly schedule", "the newsletter schedule"},
	{"oldtheme", "retire the old blog theme", "the old theme"},
	{"british", "adopt British spelling across all pages", "British spelling"},
	{"headless", "migrate to a headless setup", "going headless"},
	{"sundays", "stop publishing on Sundays", "Sunday publishing"},
	{"cookies", "show a cookie banner in every locale", "the cookie banner"},
	{"spanish", "translate the top pages into Spanish", "Spanish translations"},
	{"archive", "archive posts older than five years", "archiving old posts"},
	{"aisummaries", "use AI summaries only after human review", "AI summaries"},
	{"cta", "limit each page to one call to action", "calls to action"},
	{"stockphotos", "replace stock photos with original photography", "stock photos"},
	{"darkreaders", "enable dark mode for readers", "dark mode for readers"},
}

var decisionDates = []string{"12 January", "3 February", "17 March", "28 April", "9 June", "21 July", "5 September", "14 October"}

var decisionPhrasings = []string{
	"On {d} the team decided to {v} for {s}.",
	"Decision of {d}: {s} will {v}.",
	"For {s}, we agreed on {d} to {v}.",
}

var decisionQuestions = []string{
	"What did we decide about {k} for {s}?",
	"Was there a decision on {k} for {s}?",
}

// A note is a hand-written fact with a paraphrased query that shares no
// word with it.
type note struct{ id, subject, kind, fact, query string }

var notes = []note{
	{"lisbon-renovation", "org", "project", "The Lisbon office closes for renovation from 3 to 14 March.", "When is the Portuguese branch shut for refurbishment?"},
	{"chen-peanuts", "user:chen", "person", "Chen Wei is allergic to peanuts, so team lunches avoid them.", "Which nut intolerance should catering consider?"},
	{"translations", "org", "person", "Translations of the help center are handled by Mei Tanaka.", "Who is translating support articles?"},
	{"hero-size", "org", "project", "Homepage hero images must be at most 200 kilobytes.", "What is the size limit for the banner picture on the landing page?"},
	{"bob-vegetarian", "user:bob", "person", "Bob Okafor is vegetarian.", "Who on the team eats no meat?"},
	{"atlas-history", "site:atlas", "project", "The Atlas Careers page was published in 2019 and redesigned in 2023.", "When did the jobs portal first go live?"},
	{"legal-press", "org", "decision", "Legal review is mandatory before any press release goes out.", "Must lawyers approve announcements to journalists?"},
	{"farah-leave", "user:farah", "person", "Farah Haddad will be on parental leave until September.", "Which colleague is away caring for a newborn?"},
	{"newsletter-day", "org", "project", "Newsletter subscribers receive the digest every Thursday morning.", "What weekday does the mailing list get its email roundup?"},
	{"harbor-menu", "site:harbor", "project", "The Harbor Cafe site uses a seasonal menu that changes quarterly.", "How often are the restaurant's dishes updated?"},
	{"beacon-moderation", "site:beacon", "project", "Comments on Beacon Newsroom articles are moderated manually by Emeka.", "Who reviews reader remarks on news stories by hand?"},
	{"friday-deploys", "org", "decision", "Staging deployments are blocked on Fridays after noon.", "Can we ship to the test environment late in the week?"},
	{"fiscal-year", "org", "account", "The company's fiscal year starts in April.", "When does the financial calendar begin?"},
	{"dana-nickname", "user:dana", "preference", "Dana Kowalski prefers to be called DK in meetings.", "What nickname should be used for her during calls?"},
	{"video-renditions", "org", "project", "Video uploads are transcoded into 720p and 1080p renditions.", "Which resolutions do movie clips get converted to?"},
	{"lumen-alt", "site:lumen", "decision", "Alt text is required for every image in the Lumen Museum microsite.", "Do pictures on the gallery website need accessibility descriptions?"},
	{"gustavo-colour", "user:gustavo", "person", "Gustavo Lima is colour-blind, so charts use patterns as well as colours.", "Why do graphs rely on textures rather than hue alone?"},
	{"no-exclamation", "org", "decision", "The brand guide forbids exclamation marks in headlines.", "Are excited punctuation symbols allowed in titles?"},
	{"eu-data", "org", "account", "Customer data is stored only in the EU (Frankfurt region).", "Where are client records hosted geographically?"},
	{"hana-budget", "user:hana", "person", "Hana Sato approves every budget above 5000 euros.", "Who signs off on large spending requests?"},
	{"backup-retention", "org", "project", "Automatic backups run nightly and are kept for 30 days.", "How long is each backed-up snapshot retained?"},
	{"sponsored-label", "org", "decision", "Sponsored posts must carry an Advertisement label.", "How should paid content be marked?"},
	{"northwind-readers", "site:northwind", "project", "The Northwind Travel blog targets readers aged 25 to 40.", "What is the audience demographic for the tourism journal?"},
	{"emeka-languages", "user:emeka", "person", "Emeka Obi, based in Lagos, speaks Igbo, Yoruba and English.", "Which languages are spoken by the Nigerian teammate?"},
	{"scheduled-time", "org", "project", "Scheduled posts go live at 09:00 Paris time.", "At what hour do queued articles appear?"},
	{"password-reset", "org", "account", "Password resets expire after 15 minutes.", "How long is a credential recovery link valid?"},
	{"search-pdfs", "org", "project", "The search bar indexes PDFs attached to pages.", "Does finding things also cover uploaded document files?"},
	{"chen-design", "user:chen", "person", "Chen Wei maintains the design system in Figma.", "Who looks after our component library and styling toolkit?"},
	{"guest-fee", "org", "account", "Guest authors are paid 150 euros per article.", "What fee do freelance writers receive for each piece?"},
	{"link-crawler", "org", "project", "Broken links are checked weekly by an automated crawler.", "How frequently is the site scanned for dead hyperlinks?"},
	{"mobile-nav", "org", "project", "The mobile app mirrors the website's navigation menu.", "Does the phone application copy the web header structure?"},
	{"archive-delete", "org", "decision", "Archived pages are deleted permanently after two years.", "When do retired articles get purged for good?"},
	{"approval-sla", "org", "decision", "Reviewers must respond to approval requests within two working days.", "What is the turnaround deadline for sign-off?"},
	{"bob-seo", "user:bob", "person", "Bob Okafor manages the quarterly SEO audit.", "Who runs the search-engine optimisation check every three months?"},
	{"caption-case", "org", "decision", "Image captions are written in sentence case.", "How should picture descriptions be capitalised?"},
}

// distractors share words with the paraphrased queries and with other
// facts, but answer none of the queries.
var distractors = []struct{ subject, kind, text string }{
	{"site:harbor", "project", "The Portuguese version of the Harbor Cafe menu is still being translated."},
	{"site:beacon", "project", "The banner on the Beacon Newsroom landing page rotates daily."},
	{"site:acme", "project", "The Acme Docs portal went live with a new search bar in May."},
	{"org", "project", "Catering for the summer party is booked with a local bakery."},
	{"org", "project", "Support articles are reviewed every six months."},
	{"org", "project", "The mailing list export runs every Monday."},
	{"site:harbor", "project", "Restaurant partners can update their own opening hours."},
	{"site:beacon", "project", "Reader surveys are sent to the news desk each quarter."},
	{"org", "project", "The test environment is reset every week."},
	{"org", "project", "The financial report for investors is drafted in January."},
	{"site:lumen", "project", "Conference calls use the Lumen Museum meeting room link."},
	{"site:beacon", "project", "Movie reviews on the Beacon Newsroom are capped at 800 words."},
	{"site:lumen", "project", "The gallery page of the Lumen Museum microsite needs new descriptions."},
	{"org", "project", "Graphs in the annual report were redrawn by the design team."},
	{"org", "decision", "Titles of newsletter issues are written in title case."},
	{"site:orbit", "project", "Client testimonials are hosted on the Orbit Product store."},
	{"site:orbit", "project", "Large images slow down the Orbit Product store on phones."},
	{"org", "project", "Spending on stock photos fell by 40% this year."},
	{"site:cedar", "project", "Snapshot tests guard the Cedar School intranet templates."},
	{"org", "project", "Paid search campaigns are handled by the Growth team."},
	{"site:cedar", "project", "The audience of the Cedar School intranet is teachers and parents."},
	{"user:julia", "person", "Hour-by-hour traffic reports are emailed to Julia Berg."},
	{"org", "decision", "Credential sharing between editors is forbidden."},
	{"org", "decision", "Uploaded documents larger than 50 MB are rejected."},
	{"user:ivan", "person", "Ivan Petrov writes the release notes of the component library."},
	{"org", "account", "Freelance photographers invoice at the end of each month."},
	{"org", "project", "Dead pages are redirected to the nearest section front."},
	{"site:acme", "project", "The web header of the Acme Docs portal was simplified in May."},
	{"site:orbit", "project", "Retired products stay visible in the Orbit Product store archive."},
	{"org", "decision", "The sign-off flow for legal pages has three steps."},
	{"org", "project", "Picture credits appear under each gallery image."},
	{"org", "preference", "Nobody on the team likes meetings before 09:00."},
	{"org", "project", "The dark mode of the mobile app ships in the next release."},
	{"org", "decision", "Every new editor account needs two-factor before the first login."},
}

// generator builds the set deterministically from a fixed seed.
type generator struct {
	rng *rand.Rand
	set Set
}

func (g *generator) pick(xs []string) string { return xs[g.rng.IntN(len(xs))] }

// combos returns, for each of n subjects, a value and a phrasing of d:
// every pair of value and phrasing is used once before any is used
// again, so that two subjects say the same thing the same way (a
// near-duplicate a memory could take for a restatement) only when a
// dimension has fewer pairs than subjects.
func (g *generator) combos(d dimension, n int) [][2]string {
	var all [][2]string
	for _, v := range d.values {
		for _, p := range d.phrasings {
			all = append(all, [2]string{v, p})
		}
	}
	g.rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	out := make([][2]string, n)
	for i := range out {
		out[i] = all[i%len(all)]
	}
	return out
}

func fill(tmpl string, pairs ...string) string {
	return strings.NewReplacer(pairs...).Replace(tmpl)
}

func (g *generator) fact(id, subject, kind, text string) string {
	g.set.Facts = append(g.set.Facts, Fact{ID: id, Subject: subject, Kind: kind, Text: text})
	return id
}

func (g *generator) query(id, text string, paraphrase bool, relevant ...string) {
	g.set.Queries = append(g.set.Queries, Query{ID: id, Text: text, Relevant: relevant, Paraphrase: paraphrase})
}

// generate returns the evaluation set.
func generate() Set {
	g := &generator{rng: rand.New(rand.NewPCG(2026, 12))}

	// Users: every dimension for every user; four of them asked about
	// per user, plus a question needing two facts for half the users.
	userCombos := make([][][2]string, len(userDims))
	for i, d := range userDims {
		userCombos[i] = g.combos(d, len(users))
	}
	for ui, u := range users {
		ids := map[string]string{}
		for di, d := range userDims {
			c := userCombos[di][ui]
			ids[d.key] = g.fact(d.kind+"-"+u.id+"-"+d.key, "user:"+u.id, d.kind,
				fill(c[1], "{s}", u.name, "{v}", c[0]))
		}
		for _, i := range g.rng.Perm(len(userDims))[:4] {
			d := userDims[i]
			id := ids[d.key]
			g.query("q-"+id, fill(g.pick(d.questions), "{s}", u.name), false, id)
		}
		if ui%2 == 0 {
			g.query("q-"+u.id+"-contact-rules", fill("How and when may we contact {s} about publishing?", "{s}", u.name),
				false, ids["notify"], ids["quiet"])
		}
	}

	// Sites: every dimension; three asked about per site.
	siteCombos := make([][][2]string, len(siteDims))
	for i, d := range siteDims {
		if d.values != nil {
			siteCombos[i] = g.combos(d, len(sites))
		}
	}
	for si, s := range sites {
		ids := map[string]string{}
		for di, d := range siteDims {
			var v, p string
			switch d.key {
			case "contact":
				v, p = users[si].name, g.pick(d.phrasings)
			case "domain":
				v, p = s.domain, g.pick(d.phrasings)
			default:
				v, p = siteCombos[di][si][0], siteCombos[di][si][1]
			}
			text := fill(p, "{s}", s.name, "{v}", v)
			ids[d.key] = g.fact(d.kind+"-"+s.id+"-"+d.key, "site:"+s.id, d.kind, upperFirst(text))
		}
		for _, i := range g.rng.Perm(len(siteDims))[:3] {
			d := siteDims[i]
			id := ids[d.key]
			g.query("q-"+id, fill(g.pick(d.questions), "{s}", s.name), false, id)
		}
	}
	// The last two users are second contacts for the first two sites: a
	// question about those sites has two answers.
	for i, u := range users[len(sites):] {
		s := sites[i]
		id := g.fact("project-"+s.id+"-contact2", "site:"+s.id, "project",
			upperFirst(fill("{v} also answers questions about {s}.", "{s}", s.name, "{v}", u.name)))
		g.query("q-project-"+s.id+"-contacts", fill("Who are the contacts for {s}?", "{s}", s.name), false,
			"project-"+s.id+"-contact", id)
	}

	// Decisions: five per site, two asked about.
	for _, s := range sites {
		perm := g.rng.Perm(len(decisions))[:5]
		for j, i := range perm {
			d := decisions[i]
			id := g.fact("decision-"+s.id+"-"+d.id, "site:"+s.id, "decision", upperFirst(fill(g.pick(decisionPhrasings),
				"{d}", g.pick(decisionDates), "{s}", s.name, "{v}", d.text)))
			if j < 2 {
				g.query("q-"+id, fill(g.pick(decisionQuestions), "{k}", d.key, "{s}", s.name), false, id)
			}
		}
	}

	// Notes with their paraphrased queries, then the distractors.
	for _, n := range notes {
		id := g.fact("note-"+n.id, n.subject, n.kind, n.fact)
		g.query("q-"+id, n.query, true, id)
	}
	for i, d := range distractors {
		g.fact(fmt.Sprintf("distractor-%02d", i+1), d.subject, d.kind, d.text)
	}
	return g.set
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// encodeJSONL writes one JSON object per line.
func encodeJSONL[T any](items []T) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			panic(err) // plain structs of strings always encode
		}
	}
	return b.Bytes()
}
