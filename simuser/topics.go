package simuser

// Topic is one thing users ask about: the question, a rephrasing (a
// re-query), and four facts a reply is made of. The facts are this
// project's own short sentences, written for the simulation.
type Topic struct {
	Question, Rephrased string
	Facts               [4]string
}

// Topics is the simulated users' corpus of questions.
var Topics = []Topic{
	{"What is a comet?", "Can you tell me what comets are?", [4]string{
		"A comet is a lump of ice, rock and dust.",
		"It orbits the sun on a long, stretched path.",
		"Near the sun its ice turns to gas and forms a tail.",
		"The tail always points away from the sun.",
	}},
	{"Why is the sky blue?", "What makes the sky look blue?", [4]string{
		"Sunlight holds every colour of light.",
		"Air scatters short blue waves more than red ones.",
		"That scattered blue light reaches us from every direction.",
		"At sunset the light crosses more air, so red remains.",
	}},
	{"How do bees make honey?", "What do bees do to make honey?", [4]string{
		"Bees collect nectar from flowers.",
		"They store it in a second stomach and add enzymes.",
		"Back in the hive they spread it into wax cells.",
		"Fanning wings dry it until it thickens into honey.",
	}},
	{"What is a volcano?", "Can you explain what volcanoes are?", [4]string{
		"A volcano is an opening in the crust of the earth.",
		"Melted rock called magma rises through it.",
		"When pressure builds up, the volcano erupts.",
		"Cooled lava and ash build the mountain over time.",
	}},
	{"How does a rainbow form?", "What makes a rainbow appear?", [4]string{
		"A rainbow needs sunlight and drops of rain.",
		"Each drop bends the light as it enters.",
		"The drop splits the light into its colours.",
		"You see it with the sun behind your back.",
	}},
	{"Why do leaves change colour in autumn?", "What makes autumn leaves turn colour?", [4]string{
		"Leaves are green because of a pigment called chlorophyll.",
		"In autumn the tree stops making chlorophyll.",
		"Yellow and orange pigments that were hidden show through.",
		"Some trees also make new red pigments from sugar.",
	}},
	{"What is a black hole?", "Can you tell me what black holes are?", [4]string{
		"A black hole is a region where gravity is extreme.",
		"Not even light can escape once it crosses the edge.",
		"Many form when a huge star collapses.",
		"Their pull bends the light of stars behind them.",
	}},
	{"How do plants drink water?", "How does water get into a plant?", [4]string{
		"Roots take up water from the soil.",
		"Thin tubes carry it up through the stem.",
		"Leaves lose water into the air through tiny pores.",
		"That loss pulls more water up from below.",
	}},
	{"What causes thunder?", "Why do we hear thunder?", [4]string{
		"Thunder comes from lightning.",
		"A bolt heats the air around it in a flash.",
		"The hot air expands faster than sound.",
		"That sudden push of air makes the rumble we hear.",
	}},
	{"How do fish breathe?", "How can fish breathe under water?", [4]string{
		"Fish breathe with organs called gills.",
		"Water flows in through the mouth.",
		"The gills pull oxygen out of the water.",
		"The water then leaves through thin slits at the sides of the head.",
	}},
	{"What is the moon made of?", "What kind of material makes up the moon?", [4]string{
		"The moon is made mostly of rock.",
		"Its surface is covered in grey dust and craters.",
		"Dark plains on it are old floods of lava.",
		"It may have formed from a giant collision with the earth.",
	}},
	{"Why do cats purr?", "What makes a cat purr?", [4]string{
		"Cats purr by moving muscles in the voice box.",
		"Many purr when they feel calm and safe.",
		"Some also purr when they are hurt or afraid.",
		"The low sound may even help their bones heal.",
	}},
	{"How does a compass work?", "Why does a compass point north?", [4]string{
		"A compass holds a small magnetic needle.",
		"The earth acts like a giant magnet.",
		"The needle lines up with its magnetic field.",
		"So one end points roughly to the north.",
	}},
	{"What is a glacier?", "Can you explain what glaciers are?", [4]string{
		"A glacier is a huge mass of slowly moving ice.",
		"It forms where snow piles up for many years.",
		"Its own weight makes it creep downhill.",
		"As it moves it carves valleys into the rock.",
	}},
	{"How do birds fly?", "What lets birds fly?", [4]string{
		"Birds flap wings shaped to lift them.",
		"Air moves faster over the curved top of the wing.",
		"Strong chest muscles power each beat.",
		"Light hollow bones keep their weight low.",
	}},
	{"What is an earthquake?", "Can you tell me what causes earthquakes?", [4]string{
		"The crust of the earth is split into plates.",
		"The plates slowly push and slide past each other.",
		"Sometimes they stick and stress builds up.",
		"When they slip at once, the ground shakes.",
	}},
	{"Why is the sea salty?", "What makes sea water salty?", [4]string{
		"Rain slowly wears down rocks on land.",
		"Rivers carry the dissolved minerals to the sea.",
		"The sun evaporates water but leaves the salt.",
		"Over ages the salt has built up.",
	}},
	{"How does a seed grow?", "What happens when a seed grows?", [4]string{
		"A seed holds a tiny plant and its food.",
		"Water wakes it and the coat splits open.",
		"A root grows down and a shoot grows up.",
		"Once leaves open, the plant makes its own food.",
	}},
	{"What is a desert?", "Can you explain what deserts are?", [4]string{
		"A desert is a place with very little rain.",
		"Many deserts are hot, but some are cold.",
		"Plants there store water or grow deep roots.",
		"Animals often hide by day and come out at night.",
	}},
	{"How do bats find their way?", "How can bats fly in the dark?", [4]string{
		"Most bats use sound to find their way.",
		"They send out high calls we cannot hear.",
		"The echoes come back from objects around them.",
		"From the echoes they can even catch insects.",
	}},
	{"What is a coral reef?", "Can you tell me what coral reefs are?", [4]string{
		"A coral reef is built by tiny animals called polyps.",
		"Each polyp makes a hard shell of limestone.",
		"Over centuries the shells form huge structures.",
		"Reefs give food and shelter to many fish.",
	}},
	{"Why do we have seasons?", "What causes the seasons?", [4]string{
		"The axis of the earth is tilted.",
		"As we orbit, each half leans toward the sun in turn.",
		"The leaning half gets more direct sunlight.",
		"That half has summer while the other has winter.",
	}},
	{"How do clouds form?", "What makes clouds appear?", [4]string{
		"Warm air carries water vapour up.",
		"Higher up in the sky the air cools down.",
		"The vapour condenses on specks of dust.",
		"Billions of tiny drops floating together make a cloud.",
	}},
	{"What is a tide?", "Can you explain what tides are?", [4]string{
		"Tides are the daily rise and fall of the sea.",
		"The pull of the moon draws the water toward it.",
		"The sun adds a smaller pull of its own.",
		"Most coasts see two high tides a day.",
	}},
}
