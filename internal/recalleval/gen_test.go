package recalleval

// The generator of the evaluation set. testdata/recalleval/turns.jsonl and
// questions.jsonl (at the repository's root) are its output, checked by
// TestRecallEval_SetIsGenerated; after changing this file, rewrite them with
//
//	go test ./internal/recalleval -run TestRecallEval_SetIsGenerated -update
//
// Every sentence below is authored for this project. A conversation is a
// persona with a theme (CMS work, support, coding, travel, ...): sessions
// of themed small talk and work, separated by gaps of hours to weeks, into
// which facts are dropped once (some in two turns far apart), each asked
// about at the end by a lexical question and by a paraphrase.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// A fact is stated by the user in one or two turns (the second placed
// well after the first); lex asks for it with some of its words, para
// with none of them. Slots in braces are filled per conversation.
type fact struct {
	says      []string
	lex, para string
}

var facts = []fact{
	{[]string{"My sister {P} is getting married in {C} on {D}, so keep that weekend free."},
		"When is {P}'s wedding in {C}?", "Which sibling has a ceremony coming up, and what date?"},
	{[]string{"I'm allergic to shellfish, please never suggest shrimp or crab dishes."},
		"Which shellfish dishes should you never suggest to me?", "Is there any seafood that makes me ill?"},
	{[]string{"Our staging server is {HOST}.internal and production runs on {HOST2}.internal."},
		"What is the hostname of the staging server?", "Where do we try deployments before a release?"},
	{[]string{"I created the landing page \"{T}\", its ID is {PID}."},
		"What's the ID of the {T} landing page?", "Which identifier was assigned to that promo microsite we built?"},
	{[]string{"Support ticket {TID}: customer {P2} cannot reset her password because the reset email never arrives."},
		"What is wrong in support ticket {TID}?", "Which client had trouble getting back into their account since a login recovery message went missing?"},
	{[]string{"My flight to {C} is {FL} with {AIR}, departing {D} at 7:40."},
		"What time does flight {FL} to {C} depart?", "When does my plane leave, and which carrier?"},
	{[]string{"I booked the {H} hotel near the old town, confirmation {CODE}."},
		"What's the confirmation number for the {H} hotel?", "Where am I staying overnight on the trip?"},
	{[]string{"I prefer window seats, never the aisle."},
		"Window or aisle seat for me?", "Where do I like to sit on planes?"},
	{[]string{"The dog's name is {PET}, she's a three-year-old beagle."},
		"How old is {PET} the beagle?", "What pet do I have, and what breed?"},
	{[]string{"We use Postgres 15 for the orders service and Redis only as a cache."},
		"Which database does the orders service use?", "What storage engine sits behind purchases?"},
	{[]string{"The bug in {FN} was an off-by-one in the pagination loop; fixed in commit {SHA}."},
		"Which commit fixed the pagination bug in {FN}?", "Where did the paging defect come from, and what change resolved it?"},
	{[]string{"My budget for the whole renovation is {N}000 euros, no more."},
		"What is my renovation budget in euros?", "How much am I willing to spend fixing up the house?"},
	{[]string{"The kitchen tiles we picked are {COLOR} hexagons from {BRAND}."},
		"Which kitchen tiles did we pick?", "What did we choose to cover the cooking area floor?"},
	{[]string{"I run every Tuesday and Thursday morning, about {N} kilometres."},
		"How many kilometres do I run on Tuesday mornings?", "What is my usual jogging routine?"},
	{[]string{"Please write all blog drafts in British English, with Oxford commas."},
		"Which English should blog drafts use?", "How should posts be spelled, UK or US conventions?"},
	{[]string{"The editor role can publish, but reviewers can only comment."},
		"Can reviewers publish or only comment?", "Who is allowed to push content live?"},
	{[]string{"Our Wi-Fi password at the cabin is {CODE}."},
		"What's the Wi-Fi password at the cabin?", "How do guests get online at the lake house?"},
	{[]string{"Order {OID} arrived damaged, the lamp's base was cracked."},
		"What happened with order {OID}?", "Which purchase showed up broken?"},
	{[]string{"{P2} from accounting approves invoices over {N}00 dollars."},
		"Who approves invoices over {N}00 dollars?", "Whose sign-off is needed for big bills?"},
	{[]string{"My son {KID} starts piano lessons on Wednesdays at 4."},
		"When are {KID}'s piano lessons?", "What musical class does my boy take, and which weekday?"},
	{[]string{"The API rate limit for the partner tier is {N}00 requests per minute."},
		"What's the API rate limit for the partner tier?", "How many calls can a reseller make each sixty seconds?"},
	{[]string{"I can't stand cilantro, leave it out of everything."},
		"Do I like cilantro?", "Which herb do I dislike?"},
	{[]string{"The newsletter goes out every first Monday at 9am Berlin time."},
		"When does the newsletter go out?", "On what schedule is the email bulletin sent?"},
	{[]string{"Migrate the {SITE} site to the new theme before {D}; the old one loses support then."},
		"When must the {SITE} site migrate to the new theme?", "By when should that website move onto a fresh design?"},
	{[]string{"My laptop is a {LAPTOP} running Ubuntu 24.04."},
		"Which laptop do I have?", "What machine and operating system am I working on?"},
	{[]string{"Car rental in {C}: a compact from {RENT}, pickup at the airport, reservation {CODE}."},
		"Which company is the car rental in {C} with?", "Who provides the vehicle we drive during the holiday?"},
	{[]string{"For the offsite we reserved the conference room at {H} for 40 people."},
		"How many people is the offsite conference room for?", "What venue capacity did the team retreat need?"},
	{[]string{"Dad's birthday is {D}; he likes single-malt whisky."},
		"When is Dad's birthday?", "What gift would my father enjoy?"},
	{[]string{"The webhook secret rotates every 90 days; the next rotation is {D}."},
		"When is the next webhook secret rotation?", "How often do we change the signing key for callbacks?"},
	{[]string{"I'm learning Portuguese, currently at A2 level, practising 20 minutes a day."},
		"What level is my Portuguese?", "Which language am I studying and how good am I?"},
	{[]string{"Refund policy: customers get a full refund within 30 days, store credit after that."},
		"What is the refund policy after 30 days?", "Can shoppers receive money back on a return made five weeks later?"},
	{[]string{"The logo files live in the shared drive under Brand/2025/Final."},
		"Where are the logo files?", "In which folder can I find our emblem artwork?"},
	{[]string{"I take my coffee black, no sugar."},
		"How do I take my coffee?", "What is my preferred morning drink order?"},
	{[]string{"Our landlord {P2} said the boiler will be replaced on {D}."},
		"When will the boiler be replaced?", "When is the heating unit getting swapped, per the owner of the flat?"},
	{[]string{"The test suite takes about 11 minutes; the slow part is the integration tests against the payment sandbox."},
		"Why is the test suite slow?", "What makes CI runs drag on so long?"},
	{[]string{"Feature flag {FLAG} must stay off for EU users until legal signs off."},
		"Should feature flag {FLAG} be on for EU users?", "Which toggle is blocked in Europe pending approval from lawyers?"},
	{[]string{"Customer {P2} on the Enterprise plan has a dedicated account manager, {P}."},
		"Who is the account manager for the Enterprise customer {P2}?", "Which staff member looks after that big client?"},
	{[]string{"My gym membership at {GYM} renews on {D} for {N}00 a year."},
		"When does my {GYM} gym membership renew?", "When will the fitness club charge me again?"},
	{[]string{"Tomato seedlings go in the raised bed after the last frost, around mid-May."},
		"When do the tomato seedlings go in the raised bed?", "What's the planting date for vegetables in the garden?"},
	{[]string{"The SLA for priority-one incidents is a response within 15 minutes."},
		"What's the SLA response time for priority-one incidents?", "How fast must we answer the most urgent outages?"},
	{[]string{"Use the {SITE} brand colour #1F6FEB for all buttons."},
		"What brand colour do the {SITE} buttons use?", "Which hex shade goes on clickable elements?"},
	{[]string{"I moved the standup to 9:30 because {P} is in a different time zone."},
		"What time is the standup now?", "When does the daily team check-in start?"},
	{[]string{"Packing list for {C}: hiking boots, rain jacket, plug adapter.", "Also add the camera charger to the {C} packing list."},
		"What's on the {C} packing list?", "Which items am I bringing in my suitcase?"},
	{[]string{"The vendor quote for the roof came in at {N}400 euros.", "We accepted the roof quote; work starts {D}."},
		"What roof quote did we accept, and when does work start?", "How much will repairing the top of the house cost, and when does it begin?"},
	{[]string{"{P} is the new designer on the team.", "{P} will own the mobile mockups from now on."},
		"Who will own the mobile mockups?", "Which recent hire handles phone screen visuals?"},
}

// Slot values; each conversation draws its own.
var slots = map[string][]string{
	"P":      {"Amara", "Tomasz", "Ingrid", "Rahul", "Lucía", "Kenji", "Nadia", "Olufemi", "Maren", "Diego", "Yasmin", "Pieter"},
	"P2":     {"Helga Brandt", "Samuel Osei", "Mei Tanaka", "Carlos Ruiz", "Fatima Zahra", "Jonas Lind", "Priya Nair", "Owen Price"},
	"C":      {"Lisbon", "Kyoto", "Oaxaca", "Tallinn", "Marrakesh", "Vancouver", "Porto", "Hanoi", "Edinburgh", "Split"},
	"D":      {"June 14", "March 3", "October 21", "August 9", "May 27", "December 2", "April 18", "September 30"},
	"HOST":   {"stg-eu1", "staging-alpha", "qa-box-3", "preprod-west"},
	"HOST2":  {"prod-eu1", "prod-main", "live-west-2", "edge-prod"},
	"T":      {"Spring Sale", "Partner Program", "Winter Clearance", "Summer Camp", "Founders Story", "Holiday Gift Guide"},
	"PID":    {"page_4c1f9a", "page_88d02e", "page_1b7c33", "page_e90a51", "page_57fd10", "page_a3c6b2"},
	"TID":    {"SUP-4471", "SUP-5208", "SUP-3390", "SUP-6125", "SUP-7013"},
	"FL":     {"TP1352", "KL1692", "LH2270", "BA0486", "AF1024", "IB3141"},
	"AIR":    {"TAP", "KLM", "Lufthansa", "British Airways", "Air France", "Iberia"},
	"H":      {"Alfama Terrace", "Gion Ryokan", "Casa Azul", "Old Hanseatic", "Riad Zitoun", "Harbourfront Inn"},
	"CODE":   {"HX7-22Q", "R4K9-PL", "ZT83MN", "QW-5521", "BLUE-OTTER-77", "M9P2X4"},
	"PET":    {"Biscuit", "Mochi", "Pepper", "Juniper", "Toffee", "Olive"},
	"FN":     {"listArticles", "fetchInvoices", "pageThrough", "loadComments", "syncOrders"},
	"SHA":    {"a91f3c2", "04be7d1", "f5c2e88", "7d1a0b9", "c33e410"},
	"N":      {"12", "25", "8", "40", "15", "6"},
	"COLOR":  {"sage green", "terracotta", "matte white", "navy", "charcoal"},
	"BRAND":  {"Mosaico", "Tilecraft", "Porcelanosa Line", "Vitra Studio"},
	"OID":    {"ORD-88213", "ORD-10457", "ORD-67290", "ORD-33148"},
	"KID":    {"Leo", "Arjun", "Matteo", "Felix", "Kofi"},
	"SITE":   {"Northwind", "Harbor Cafe", "Lumen Museum", "Atlas Careers", "Cedar School"},
	"LAPTOP": {"ThinkPad X1 Carbon", "Framework 13", "Dell XPS 15", "ThinkPad T14"},
	"RENT":   {"Sixt", "Europcar", "Hertz", "Avis"},
	"FLAG":   {"new_checkout", "ai_summaries", "beta_search", "one_click_pay"},
	"GYM":    {"Iron Works", "PulseFit", "Basecamp Climbing", "Blue Lagoon Pool"},
}

// A theme is a conversation's everyday work: pairs of a user message and
// the assistant's reply, with the same slots.
type theme struct {
	name  string
	pairs [][2]string
}

var themes = []theme{
	{"cms", [][2]string{
		{"Can you list the sections on the {T} page?", "It has a hero, three feature cards, a FAQ block and the footer."},
		{"Change the hero headline on {PID} to something shorter.", "Done: the headline now reads \"Less waiting, more doing\". It is saved as a draft."},
		{"Schedule the blog post about our new opening hours for Friday morning.", "Scheduled for Friday at 08:00; it will appear on the home page teaser as well."},
		{"Upload the photos from the shoot and tag them as campaign assets.", "Twelve images uploaded to the asset library with the tag campaign."},
		{"Translate the About page into German and Spanish.", "Both translations are drafts now; the German one needs a glossary check for product names."},
		{"Which pages are still unpublished?", "Four drafts: Careers, the press kit, the {T} variant B and a test page you created last month."},
		{"Archive the old pricing page but keep the redirect.", "Archived; /pricing-old now redirects to /pricing with a 301."},
		{"Add an alt text to every image in the gallery section.", "I wrote alt texts for 9 images; two were decorative so I marked them as such."},
	}},
	{"support", [][2]string{
		{"A customer says the invoice PDF is blank, what should I reply?", "Ask which browser they use and offer to resend the invoice as an attachment; the viewer bug is known in old Safari."},
		{"Summarise today's queue for me.", "Seventeen open tickets: six billing, five login, four shipping and two feature requests."},
		{"Draft a polite answer for someone asking to cancel their subscription.", "Here is a draft that confirms the cancellation date and mentions they keep access until the period ends."},
		{"How many tickets did we close yesterday?", "Forty-two closed, with a median first response of 38 minutes."},
		{"Escalate {TID} to the billing team.", "Escalated with a note about the double charge; billing acknowledged it."},
		{"Which macros do we have for shipping delays?", "Three: carrier delay, customs hold and address problem."},
		{"Tag all tickets mentioning the mobile app crash.", "Tagged 11 tickets with app-crash; most are from Android 14 devices."},
	}},
	{"coding", [][2]string{
		{"Why does the build fail on the CI runner but not locally?", "The runner uses Go 1.22 while your go.mod asks for a newer toolchain; pin the version in the workflow."},
		{"Review this function that parses the CSV export.", "It ignores quoted commas; use encoding/csv instead of splitting lines by hand."},
		{"Write a unit test for {FN}.", "Added a table-driven test with empty, one-page and three-page inputs."},
		{"How do I profile the memory use of the importer?", "Run it with the heap profile flag and open the file with pprof; look at inuse_space."},
		{"Rename the package util to something meaningful.", "I suggest textfmt, since everything in it formats text; I updated the imports."},
		{"The linter complains about an unused parameter in the handler.", "Rename it to an underscore or drop it if the interface allows."},
		{"Can we cache the results of the geocoding calls?", "Yes, a small LRU keyed by the address with a one-day expiry would cut most calls."},
	}},
	{"travel", [][2]string{
		{"What's the weather usually like in {C} in spring?", "Mild, around 18 degrees during the day, with occasional showers."},
		{"Find a good neighbourhood for dinner in {C}.", "The area around the central market has small family restaurants and stays lively late."},
		{"How do I get from the airport to the city centre in {C}?", "There is a metro line that takes about 25 minutes; taxis cost roughly four times as much."},
		{"Make a two-day itinerary for {C}.", "Day one: old quarter and museums; day two: a day trip to the coast and a sunset viewpoint."},
		{"Do I need a visa for a short stay?", "For stays under 90 days with your passport you do not need one."},
		{"Which travel insurance covers cancelled trains?", "Most comprehensive plans do; check the clause about missed connections."},
		{"Convert 200 euros to the local currency.", "At today's rate that is roughly what the exchange office will quote, minus their fee."},
	}},
	{"home", [][2]string{
		{"How long does grout need to dry before we can shower?", "Usually 48 to 72 hours, depending on the product and the humidity."},
		{"Compare the two quotes for the bathroom.", "The second is cheaper but excludes removing the old tub, so they end up close."},
		{"What paint finish is best for a hallway?", "Eggshell or satin: washable without showing every bump in the wall."},
		{"Remind me what the electrician said about the sockets.", "He recommended adding two double sockets behind the desk and replacing the old fuse box."},
		{"Should we insulate the attic before winter?", "Yes, it is one of the cheapest ways to cut heating costs."},
		{"Make a shopping list for the weekend DIY.", "Sandpaper, filler, masking tape, a roller and primer."},
	}},
	{"personal", [][2]string{
		{"Suggest a dinner for four that is quick to make.", "A tray bake with chickpeas, peppers and feta takes 35 minutes."},
		{"Help me plan workouts for next week.", "Three runs, two strength sessions and one rest day in the middle."},
		{"What's a good book for a long train ride?", "A light mystery novel or a collection of short stories works well."},
		{"Write a birthday message for my colleague {P}.", "Happy birthday, {P}! Thanks for all the help this year, enjoy your day."},
		{"How much water should I drink on a hot day?", "Roughly two to three litres, more if you exercise."},
		{"Recommend a podcast about history.", "Try one that tells a single story per season; they are easy to follow."},
		{"Plan a picnic for Sunday.", "Sandwiches, fruit, lemonade and a blanket; the park by the river has shade."},
	}},
	{"finance", [][2]string{
		{"Categorise last month's expenses.", "Groceries 410, transport 95, eating out 180, subscriptions 62 and utilities 140."},
		{"How much did we spend on software licences this quarter?", "About 3,200 in total, most of it on the design suite."},
		{"Draft an email reminding a client about an overdue payment.", "Here is a friendly reminder that cites the invoice number and the due date."},
		{"Set a savings goal for the summer holiday.", "If you save 150 a month from now, you will have enough by July."},
		{"Which subscriptions could we cancel?", "The second music service and the unused cloud storage plan."},
		{"Export the VAT report for the accountant.", "The report is ready as a spreadsheet with one sheet per month."},
	}},
	{"events", [][2]string{
		{"Send the save-the-date for the team summer party.", "Sent to 38 people with a calendar invitation attached."},
		{"How many people confirmed for the workshop?", "Twenty-three confirmed, four declined and the rest have not answered."},
		{"Find a caterer that does vegan options.", "Two local caterers offer full vegan menus; both need ten days' notice."},
		{"Draft the agenda for the kickoff.", "Welcome, goals for the year, team introductions, lunch, then breakout sessions."},
		{"Book a photographer for the launch.", "I found three with availability; the cheapest asks for a half-day minimum."},
		{"What do we still need for the conference booth?", "A banner, brochures, a screen for the demo and a power strip."},
	}},
	{"study", [][2]string{
		{"Give me ten new vocabulary words to practise.", "Here are ten words about food and shopping, each with an example sentence."},
		{"Explain the difference between the two past tenses.", "One is for finished actions at a specific time, the other for background and habits."},
		{"Quiz me on yesterday's lesson.", "First question: how do you say I would like a table for two?"},
		{"Correct this short paragraph I wrote.", "Two agreement mistakes and one wrong preposition; otherwise it reads naturally."},
		{"Recommend a series to watch with subtitles.", "A slow-paced drama is ideal at your level, since the dialogue is clear."},
		{"How should I review flashcards efficiently?", "Use spaced repetition and keep sessions short but daily."},
	}},
	{"garden", [][2]string{
		{"When should I prune the roses?", "Late winter, just before new growth starts."},
		{"The basil leaves are turning yellow, why?", "Probably too much water; let the soil dry between waterings."},
		{"Which flowers attract bees?", "Lavender, borage and sunflowers are favourites."},
		{"How often should I water the lawn in summer?", "Deeply twice a week is better than a little every day."},
		{"Plan a small herb bed.", "Thyme, rosemary and sage together; parsley and chives in a damper corner."},
		{"What can I compost?", "Vegetable scraps, coffee grounds, eggshells and dry leaves; no meat or dairy."},
	}},
}

// Greetings that open a session and acknowledgements of a fact.
var (
	openers = []string{"Morning! Picking up where we left off.", "Hi again.", "Back after a break, let's continue.", "Hello, quick session today.", "Hey, got a few things for you."}
	acks    = []string{"Noted, I'll keep that in mind.", "Got it, saved.", "Thanks, I'll remember that.", "Understood.", "Okay, I've made a note."}
	smalls  = [][2]string{
		{"Thanks, that's helpful.", "You're welcome."},
		{"Let me think about it and come back later.", "Sure, take your time."},
		{"Can you say that more briefly?", "Of course: in short, yes, go ahead."},
		{"That's all for now.", "Talk soon."},
	}
)

// nearMisses share words with the facts and their questions without
// answering them, as a long conversation's other mentions do.
var nearMisses = [][2]string{
	{"Is the staging server down again?", "It answers now; it was restarting after a deploy."},
	{"Any news from the wedding photographer?", "Not yet, I'll check the inbox after lunch."},
	{"Which flight options to {C} are cheapest next month?", "Mid-week departures are about a third cheaper."},
	{"Remind me to book the dog's vet appointment.", "Added a reminder for Monday."},
	{"The orders service threw a timeout again this morning.", "The logs show a slow query on the reports table."},
	{"Did the kitchen fitter confirm the date?", "He did, for the week after next."},
	{"The newsletter template needs a new footer.", "I can move the social links into the footer block."},
	{"Ask the landlord about the parking space.", "Drafted a short message asking about a spot in the courtyard."},
	{"Show me the API docs for the rate limit headers.", "They are under Reference, Headers; the reset header is in seconds."},
	{"The feature flag dashboard is slow today.", "It is loading every flag's history; filtering by team helps."},
	{"What's our password policy for new accounts?", "Twelve characters minimum and a check against leaked passwords."},
	{"Did the hotel send the invoice for the last trip?", "Yes, it is in the travel folder."},
	{"Which support tickets are waiting on the customer?", "Five, the oldest from last Tuesday."},
	{"The test for the pagination helper is flaky.", "It depends on map order; sorting the keys fixes it."},
	{"Can the editor role see analytics?", "Only the summary; full analytics need the admin role."},
	{"My sister sent photos from her holiday.", "Lovely, do you want them in a shared album?"},
	{"How do I reset the router at the cabin?", "Hold the back button for ten seconds until the light blinks."},
	{"Coffee machine at the office is broken again.", "I can draft a note to facilities."},
	{"The refund for the old subscription came through.", "Good, I'll mark it reconciled."},
	{"Where did we put the brand guidelines?", "In the shared drive next to the templates."},
	{"Look up running shoes for flat feet.", "Stability shoes with a firm heel counter are a good start."},
	{"Is there a budget line for team lunches?", "Yes, a small one under morale, about half used."},
	{"The gym was packed this morning.", "Early afternoon tends to be quieter."},
	{"Check the birthday calendar for next month.", "Two birthdays: one on the 4th and one on the 19th."},
	{"Find a Portuguese podcast for beginners.", "There are a few with slow dialogues and transcripts."},
}

// generate returns the set, the same on every run.
func generate() ([]Turn, []Question) {
	var turns []Turn
	var questions []Question
	for ci := range 10 {
		conv := fmt.Sprintf("c%02d", ci+1)
		r := rand.New(rand.NewPCG(uint64(ci)+1, 25))
		th := themes[ci%len(themes)]
		fill := map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(slots)) {
			fill[k] = slots[k][r.IntN(len(slots[k]))]
		}
		sub := func(s string) string {
			for k, v := range fill {
				s = strings.ReplaceAll(s, "{"+k+"}", v)
			}
			return s
		}
		// 24 of the facts, in a random order.
		chosen := r.Perm(len(facts))[:24]
		n := 320 + 2*r.IntN(30) // turns, even
		pairs := n / 2
		// Place each fact's user turn at a distinct pair; a second
		// statement goes at least 20 pairs after the first.
		at := map[int][2]int{} // pair -> fact index, statement index
		var placed [][]int     // per chosen fact: pair indices
		for _, fi := range chosen {
			var ps []int
			for si := range facts[fi].says {
				for {
					lo := 1
					if si > 0 {
						lo = ps[0] + 20
					}
					hi := pairs*9/10 - 1
					if lo >= hi {
						lo = hi - 1
					}
					p := lo + r.IntN(hi-lo)
					if _, taken := at[p]; !taken {
						at[p] = [2]int{fi, si}
						ps = append(ps, p)
						break
					}
				}
			}
			placed = append(placed, ps)
		}
		clock := time.Date(2025, time.Month(1+ci), 3+ci, 9, 0, 0, 0, time.UTC)
		session, left := 0, 0
		for p := range pairs {
			var user, asst string
			opens := left == 0
			if opens {
				session++
				left = 24 + r.IntN(18)
				if session > 1 {
					clock = clock.Add(time.Duration(6+r.IntN(24*14)) * time.Hour)
				}
			}
			left--
			switch f, ok := at[p]; {
			case ok:
				user, asst = sub(facts[f[0]].says[f[1]]), acks[r.IntN(len(acks))]
			case opens:
				user, asst = openers[r.IntN(len(openers))], "Welcome back. What shall we work on?"
			case r.IntN(10) == 0:
				sm := smalls[r.IntN(len(smalls))]
				user, asst = sm[0], sm[1]
			case r.IntN(4) == 0:
				nm := nearMisses[r.IntN(len(nearMisses))]
				user, asst = sub(nm[0]), sub(nm[1])
			default:
				t := th
				if r.IntN(5) == 0 { // now and then, another topic
					t = themes[r.IntN(len(themes))]
				}
				pr := t.pairs[r.IntN(len(t.pairs))]
				user, asst = sub(pr[0]), sub(pr[1])
			}
			for i, text := range []string{user, asst} {
				speaker := "user"
				if i == 1 {
					speaker = "assistant"
				}
				clock = clock.Add(time.Duration(20+r.IntN(200)) * time.Second)
				turns = append(turns, Turn{
					Conv: conv, ID: fmt.Sprintf("%s-t%04d", conv, 2*p+i+1), Session: session,
					Time: clock.Format(time.RFC3339), Speaker: speaker, Text: text,
				})
			}
		}
		for i, fi := range chosen {
			var ev []string
			for _, p := range placed[i] {
				ev = append(ev, fmt.Sprintf("%s-t%04d", conv, 2*p+1))
			}
			questions = append(questions,
				Question{ID: fmt.Sprintf("%s-q%02dl", conv, i+1), Conv: conv, Text: sub(facts[fi].lex), Evidence: ev, Kind: Lexical},
				Question{ID: fmt.Sprintf("%s-q%02dp", conv, i+1), Conv: conv, Text: sub(facts[fi].para), Evidence: ev, Kind: Paraphrase})
		}
	}
	return turns, questions
}

func encodeJSONL[T any](vs []T) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			panic(err)
		}
	}
	return b.Bytes()
}
