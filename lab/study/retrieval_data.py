"""A small retrieval task written for the lab: 64 passages, each with one question it answers.

Every passage is the right answer to its own query and a distractor for the other 63. Topics come
in pairs or triples that share words (two about coffee, two about bicycles, three about the
moon...), so a model that matches words rather than meaning picks the neighbour: the task is
easy enough for float32 and hard enough that a damaged model loses answers. The sentences were
written for this lab and belong to it; no data set is downloaded.
"""

from __future__ import annotations

#: (query, passage) pairs; the passage at index i is the right answer to the query at index i
PAIRS: tuple[tuple[str, str], ...] = (
    (
        "How long should espresso take to pull?",
        "A shot of espresso usually runs for twenty-five to thirty seconds; much faster and it tastes sour.",
    ),
    (
        "Where do coffee plants grow best?",
        "Coffee shrubs thrive on shaded tropical hillsides, between about one and two thousand metres up.",
    ),
    (
        "Why does bread dough need to rest?",
        "Resting dough lets the gluten relax and the yeast produce gas, so the loaf rises and stays soft.",
    ),
    (
        "What makes sourdough sour?",
        "Lactic acid bacteria living in the starter alongside wild yeast give sourdough its tang.",
    ),
    (
        "How do I fix a flat bicycle tyre?",
        "Lever the tyre off the rim, find the hole in the inner tube, patch it or fit a new tube, and pump it up.",
    ),
    (
        "Which gear should I use to climb a steep hill on a bike?",
        "On a steep climb shift to the smallest chainring and a large rear sprocket so the pedals turn easily.",
    ),
    (
        "Why does the moon have phases?",
        "As the moon orbits the earth we see different amounts of its sunlit half, from new moon to full.",
    ),
    (
        "What causes ocean tides?",
        "The moon's gravity pulls the oceans into bulges, and the earth turning beneath them makes the tides.",
    ),
    (
        "When did people first walk on the moon?",
        "Two Apollo 11 astronauts stepped onto the lunar surface in July 1969.",
    ),
    (
        "How often should I water a cactus?",
        "Cacti store water in their stems, so in summer a soak every two or three weeks is plenty.",
    ),
    (
        "Why are my tomato leaves turning yellow?",
        "Yellow lower leaves on tomato plants often mean too little nitrogen or water sitting around the roots.",
    ),
    (
        "What is a good way to memorise vocabulary in a new language?",
        "Spaced repetition shows each word again just before you would forget it, which makes it stick.",
    ),
    (
        "Why is Japanese written with three scripts?",
        "Japanese mixes kanji borrowed from Chinese with two syllabaries, hiragana and katakana.",
    ),
    (
        "How do vaccines protect against disease?",
        "A vaccine shows the immune system a harmless piece of a germ so it can recognise the real one later.",
    ),
    (
        "Why should antibiotics not be used for a cold?",
        "Colds are caused by viruses, and antibiotics only kill bacteria, so they do not help.",
    ),
    (
        "How much sleep does an adult need?",
        "Most adults feel and work best with seven to nine hours of sleep each night.",
    ),
    (
        "What does a firewall do?",
        "A firewall filters network traffic, letting allowed connections through and blocking the rest.",
    ),
    (
        "Why should I use a password manager?",
        "A password manager remembers a long, different password for every site, so one leak does not open all.",
    ),
    (
        "What is two-factor authentication?",
        "Two-factor login asks for a second proof, such as a code from your phone, besides the password.",
    ),
    (
        "How does a hash table find a key quickly?",
        "A hash table turns each key into an index with a hash function, so a lookup jumps straight to its slot.",
    ),
    (
        "What is the difference between a process and a thread?",
        "Threads share the memory of the process they run in, while separate processes each have their own.",
    ),
    (
        "Why does floating point arithmetic give 0.1 + 0.2 != 0.3?",
        "Binary floating point cannot store one tenth exactly, so small rounding errors appear in the sum.",
    ),
    (
        "What does git rebase do?",
        "Rebasing replays your commits on top of another branch, giving a straight history without merges.",
    ),
    (
        "How do I undo my last git commit but keep the changes?",
        "Run git reset --soft HEAD~1: the commit disappears and its changes stay staged.",
    ),
    (
        "What is quantization of a neural network?",
        "Quantizing a network stores its weights with fewer bits, such as four, to save memory and bandwidth.",
    ),
    (
        "Why do GPUs speed up deep learning?",
        "Graphics processors run thousands of multiply-adds in parallel, which is what matrix products need.",
    ),
    (
        "What is overfitting in machine learning?",
        "A model overfits when it memorises its training examples and does worse on data it has not seen.",
    ),
    (
        "How do solar panels make electricity?",
        "Photovoltaic cells release electrons when sunlight hits them, producing a direct current.",
    ),
    (
        "Why do wind turbines have three blades?",
        "Three blades balance smooth rotation against cost and weight better than two or four.",
    ),
    (
        "How does a heat pump warm a house?",
        "A heat pump moves heat from the cold outside air into the house using a refrigerant cycle.",
    ),
    (
        "Why is the sky blue?",
        "Air molecules scatter short blue wavelengths of sunlight far more than red ones.",
    ),
    (
        "Why are sunsets red?",
        "At sunset light crosses so much air that the blue is scattered away and mostly red reaches us.",
    ),
    (
        "What causes thunder?",
        "Lightning heats the air so fast that it expands explosively, and we hear that as thunder.",
    ),
    (
        "How do I get a red wine stain out of a carpet?",
        "Blot the wine, pour on cold water and a little salt or dish soap, and blot again; never rub.",
    ),
    (
        "How do I remove rust from a kitchen knife?",
        "Soak the blade in white vinegar for a few minutes, then scrub the rust off and dry it well.",
    ),
    (
        "How long do you boil an egg for a soft yolk?",
        "Lower the egg into boiling water for six minutes, then cool it in cold water for a runny yolk.",
    ),
    (
        "How do I keep rice from sticking together?",
        "Rinse the rice until the water runs clear to wash off surface starch before cooking it.",
    ),
    (
        "Why do onions make you cry?",
        "Cutting an onion releases a sulphur gas that irritates the eyes and makes them water.",
    ),
    (
        "What is the offside rule in football?",
        "A player is offside if nearer the goal line than the ball and the second-last defender when it is played.",
    ),
    (
        "How many players are on a basketball team on court?",
        "Each basketball side has five players on the court at a time.",
    ),
    (
        "How do I start running if I am a beginner?",
        "Begin with short intervals of jogging and walking, three times a week, and lengthen the jogs slowly.",
    ),
    (
        "Why do muscles get sore a day after exercise?",
        "Delayed soreness comes from tiny tears in muscle fibres and the repair that follows unfamiliar effort.",
    ),
    (
        "What did the printing press change?",
        "Gutenberg's movable type made books cheap enough to spread ideas widely across Europe.",
    ),
    (
        "Why did the Roman Empire build roads?",
        "Roman roads let armies, officials and trade move quickly across the empire.",
    ),
    (
        "Who painted the ceiling of the Sistine Chapel?",
        "Michelangelo painted the Sistine Chapel ceiling between 1508 and 1512.",
    ),
    (
        "How do bees make honey?",
        "Bees sip nectar, add enzymes and fan it in the comb until enough water evaporates to make honey.",
    ),
    (
        "Why do birds migrate south in winter?",
        "Many birds fly to warmer places in winter where food such as insects is still easy to find.",
    ),
    (
        "How do cats purr?",
        "A cat purrs by twitching the muscles of its voice box as it breathes in and out.",
    ),
    (
        "Why do dogs pant?",
        "Dogs pant to cool down, because they sweat very little and lose heat by breathing fast.",
    ),
    (
        "How do I budget my monthly income?",
        "List your income, subtract fixed bills, then give the rest to savings and spending before the month starts.",
    ),
    (
        "What is compound interest?",
        "Compound interest pays interest on earlier interest too, so savings grow faster each year.",
    ),
    (
        "Why does inflation reduce savings?",
        "When prices rise, the same amount of money buys less, so cash kept aside loses value.",
    ),
    (
        "How do I write a good cover letter?",
        "A strong cover letter names the job, shows one or two results you achieved, and stays under a page.",
    ),
    (
        "How should I prepare for a job interview?",
        "Research the company, practise answers about past work, and prepare a few questions for them.",
    ),
    (
        "Why do we have leap years?",
        "The earth takes about 365.25 days to orbit the sun, so an extra day every four years keeps the calendar in step.",
    ),
    (
        "What time zone does the United Kingdom use in winter?",
        "In winter the UK keeps Greenwich Mean Time and moves one hour ahead for British Summer Time.",
    ),
    (
        "How do noise-cancelling headphones work?",
        "Microphones pick up outside noise and the headphones play the inverted wave to cancel it.",
    ),
    (
        "Why does my phone battery wear out?",
        "Lithium-ion cells lose capacity with every charge cycle, faster when kept hot or always at full charge.",
    ),
    (
        "How does GPS know where I am?",
        "A GPS receiver times signals from several satellites and works out its position from the delays.",
    ),
    (
        "How do I tune a guitar by ear?",
        "Tune the low E string, then match each next string to the fifth fret of the one below, except G to B at the fourth.",
    ),
    (
        "What is a chord in music?",
        "A chord is three or more notes played together, such as a major triad of root, third and fifth.",
    ),
    (
        "Why do volcanoes erupt?",
        "Magma rising from deep below collects gas and pressure until it bursts through the crust.",
    ),
    (
        "What causes earthquakes?",
        "Earthquakes happen when stress in rocks along a fault is released in a sudden slip.",
    ),
    (
        "How do glaciers shape valleys?",
        "Moving ice grinds rock beneath it and carves narrow river valleys into wide U shapes.",
    ),
)

QUERIES: tuple[str, ...] = tuple(query for query, _ in PAIRS)
PASSAGES: tuple[str, ...] = tuple(passage for _, passage in PAIRS)
