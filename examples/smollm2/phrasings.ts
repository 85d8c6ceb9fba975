// The SmolLM2 example's questions in words (make-data.ts writes them): the problem a question asks, the names and
// things it is about, and its phrasings: for training (TRAIN_TEMPLATES, and WIDE_TEMPLATES with `--wide`) and
// held out for validation (VAL_TEMPLATES). A phrasing is a pure function of the problem, a name and a plural
// noun; make-data.ts draws all three from its seeded streams, so a phrasing added, removed or moved changes the
// files it writes.
import type { Kind } from './cues.ts';

/** The problem's numbers and operators: `a op1 b` or `a op1 b op2 c`, evaluated left to right. */
export interface Problem {
  kind: Kind;
  a: number;
  b: number;
  c?: number;
}

export const NAMES = {
  train: ['Maria', 'Tom', 'Aisha', 'Ken', 'Lucia', 'Omar', 'Emma', 'Ravi', 'Nina', 'Sam', 'Yuki', 'Leo'],
  val: ['Sofia', 'Jonas', 'Mei', 'Diego', 'Hana', 'Peter'],
  dev: ['Ines', 'Kofi', 'Lars', 'Priya', 'Tariq', 'Zoe'],
};
export const THINGS = {
  train: [
    'stickers',
    'marbles',
    'coins',
    'stamps',
    'books',
    'pencils',
    'apples',
    'bottles',
    'toys',
    'nails',
    'cups',
    'bricks',
  ],
  val: ['shells', 'cards', 'beads', 'screws', 'buttons', 'tickets'],
  dev: ['coupons', 'tokens', 'ribbons', 'badges', 'candles', 'tiles'],
};

export type Template = (p: Problem, name: string, things: string) => string;

// Training phrasings: many sentence shapes and verbs per kind (a few give the numbers out of order), so that what
// the model learns is which words mean which operation, not a handful of sentences. None of them uses a held-out
// phrasing's sentence shape below; the verbs they share are few and plain ("sold", "collect", "hold").
export const TRAIN_TEMPLATES: Record<Problem['kind'], Template[]> = {
  add: [
    (p, n, t) => `${n} has ${p.a} ${t}. ${n} gets ${p.b} more. How many ${t} does ${n} have now?`,
    (p, _n, t) => `A shop had ${p.a} ${t} and received ${p.b} more. How many ${t} does the shop have?`,
    (p, n, t) =>
      `${n} collected ${p.a} ${t} last year and ${p.b} this year. How many ${t} did ${n} collect in both years?`,
    (p, _n, t) => `A library has ${p.a} ${t}. A donor adds ${p.b}. How many ${t} does the library hold now?`,
    (p, n, t) =>
      `${n} saved ${p.a} ${t}, then won ${p.b} more in a contest. How many ${t} does ${n} have altogether?`,
    (p, _n, t) =>
      `One truck carries ${p.a} ${t} and a second truck carries ${p.b}. How many ${t} do both trucks carry?`,
    (p, n, t) => `${n} picked up ${p.b} ${t} and already had ${p.a}. How many ${t} does ${n} have in all?`,
    (p, _n, t) => `A farm had ${p.a} ${t}. A delivery brought ${p.b} more. How many ${t} are on the farm?`,
  ],
  sub: [
    (p, n, t) => `${n} had ${p.a} ${t} and gave away ${p.b}. How many ${t} are left?`,
    (p, _n, t) => `A warehouse stored ${p.a} ${t}. ${p.b} of them were shipped out. How many ${t} remain?`,
    (p, _n, t) =>
      `A school had ${p.a} ${t} and used ${p.b} of them. How many ${t} does the school still have?`,
    (p, n, t) => `${n} spent ${p.b} of ${n}'s ${p.a} ${t}. How many ${t} does ${n} have left?`,
    (p, _n, t) => `A factory made ${p.a} ${t}, but ${p.b} were broken. How many good ${t} are there?`,
    (p, n, t) => `${n} needs ${p.a} ${t} and already has ${p.b}. How many more ${t} does ${n} need?`,
    (p, n, t) => `There are ${p.a} ${t} on a shelf. ${n} removes ${p.b}. How many ${t} are on the shelf now?`,
    (p, _n, t) => `How many ${t} are left when ${p.b} are sold from a stock of ${p.a}?`,
  ],
  mul: [
    (p, _n, t) => `Each box holds ${p.b} ${t}. How many ${t} are in ${p.a} boxes?`,
    (p, n, t) => `${n} buys ${p.a} packs of ${t} with ${p.b} in each pack. How many ${t} is that?`,
    (p, _n, t) => `A machine makes ${p.b} ${t} an hour. How many ${t} does it make in ${p.a} hours?`,
    (p, _n, t) => `There are ${p.a} rows with ${p.b} ${t} in every row. How many ${t} are there?`,
    (p, n, t) => `${n} puts ${p.b} ${t} on each of ${p.a} shelves. How many ${t} are on the shelves?`,
    (p, _n, t) => `${p.a} teams receive ${p.b} ${t} per team. How many ${t} are handed out?`,
    (p, n, t) => `${n} fills ${p.a} bags with ${p.b} ${t} in every bag. How many ${t} does ${n} use?`,
  ],
  'sub-add': [
    (p, n, t) =>
      `${n} had ${p.a} ${t}, gave away ${p.b} and then bought ${p.c} more. How many ${t} does ${n} have now?`,
    (p, _n, t) =>
      `A warehouse stored ${p.a} ${t}. It shipped out ${p.b} and then received ${p.c}. How many ${t} are in the warehouse?`,
    (p, n, t) =>
      `A box held ${p.a} ${t}. ${n} removed ${p.b} and later put ${p.c} back. How many ${t} are in the box?`,
    (p, n, t) => `${n} had ${p.a} ${t}, used ${p.b} and then made ${p.c} more. How many ${t} does ${n} have?`,
    (p, _n, t) =>
      `A store had ${p.a} ${t}. After selling ${p.b}, it ordered ${p.c} more. How many ${t} does the store have?`,
    (p, n, t) => `${n} spent ${p.b} of ${p.a} ${t} and then earned ${p.c}. How many ${t} does ${n} have?`,
  ],
  'add-sub': [
    (p, _n, t) =>
      `A shop had ${p.a} ${t}, received ${p.b} more and then sold ${p.c}. How many ${t} are left?`,
    (p, n, t) =>
      `${n} had ${p.a} ${t}, got ${p.b} more from a friend and gave away ${p.c}. How many ${t} does ${n} have now?`,
    (p, _n, t) =>
      `A depot holds ${p.a} ${t}. A delivery brings ${p.b} and ${p.c} are shipped out. How many ${t} are in the depot?`,
    (p, n, t) =>
      `${n} collected ${p.a} ${t} in spring and ${p.b} in summer, then used ${p.c}. How many ${t} are left?`,
    (p, _n, t) =>
      `A school bought ${p.a} ${t} and then ${p.b} more, but ${p.c} were broken. How many ${t} can still be used?`,
    (p, n, t) => `${n} saved ${p.a} ${t}, won ${p.b} and spent ${p.c}. How many ${t} does ${n} have?`,
  ],
  'mul-add': [
    (p, n, t) =>
      `${n} has ${p.a} boxes of ${p.b} ${t} each and ${p.c} loose ${t}. How many ${t} does ${n} have in all?`,
    (p, _n, t) =>
      `A store has ${p.a} shelves with ${p.b} ${t} on each and ${p.c} more in the back room. How many ${t} does the store have?`,
    (p, n, t) =>
      `${n} buys ${p.a} packs of ${p.b} ${t} and gets ${p.c} extra for free. How many ${t} does ${n} get?`,
    (p, _n, t) =>
      `There are ${p.a} rows of ${p.b} ${t} and a separate pile of ${p.c}. How many ${t} are there altogether?`,
    (p, _n, t) =>
      `A factory packs ${p.b} ${t} into each of ${p.a} cartons and keeps ${p.c} spare. How many ${t} did it make?`,
  ],
};

// More training phrasings (`--wide`, a trial of 2026-12-05 that was not shipped; README.md): six a kind on top of
// TRAIN_TEMPLATES, 76 in all, with other verbs and objects and several in contrasting pairs (`loaded ...
// unloaded` and `unloaded ... loaded`, `poured in` and `leaked out`), so that the sign depends on the verb and not
// on where in the sentence a number sits. Like TRAIN_TEMPLATES they use none of the held-out phrasings' sentence
// shapes or verbs (VAL_TEMPLATES, below).
export const WIDE_TEMPLATES: Record<Problem['kind'], Template[]> = {
  add: [
    (p, n, t) =>
      `${n} counted ${p.a} ${t} on Monday and ${p.b} on Tuesday. How many ${t} did ${n} count on the two days?`,
    (p, n, t) =>
      `${n} inherited ${p.a} ${t} from an aunt and bought ${p.b} more at a market. How many ${t} does ${n} have?`,
    (p, _n, t) =>
      `A club raised ${p.a} ${t} at one event and ${p.b} at another. How many ${t} did the club raise?`,
    (p, n, t) =>
      `${n} borrowed ${p.b} ${t} from a classmate and had ${p.a} before. How many ${t} does ${n} have now?`,
    (p, _n, t) => `A tank had ${p.a} ${t}, and ${p.b} more were poured in. How many ${t} are in the tank?`,
    (p, n, t) =>
      `${n} earned ${p.b} ${t} as a reward, on top of the ${p.a} ${n} had saved. How many ${t} does ${n} have?`,
  ],
  sub: [
    (p, n, t) => `${n} lent ${p.b} of ${n}'s ${p.a} ${t} to a classmate. How many ${t} does ${n} have left?`,
    (p, _n, t) => `A baker threw away ${p.b} of ${p.a} ${t}. How many ${t} were not thrown away?`,
    (p, n, t) =>
      `${n} donated ${p.b} ${t} from a collection of ${p.a}. How many ${t} are in the collection now?`,
    (p, _n, t) => `A tank had ${p.a} ${t}, and ${p.b} leaked out. How many ${t} are in the tank?`,
    (p, n, t) =>
      `${n} had ${p.a} ${t}, but ${p.b} fell through a hole in the sack on the way home. How many ${t} reached home?`,
    (p, n, t) => `What is left of ${p.a} ${t} after ${n} hands out ${p.b}?`,
  ],
  mul: [
    (p, n, t) => `${n} packs ${p.b} ${t} into every one of ${p.a} baskets. How many ${t} are packed?`,
    (p, _n, t) =>
      `A bus makes ${p.a} trips and carries ${p.b} ${t} on each trip. How many ${t} does the bus carry?`,
    (p, n, t) => `${n} paints ${p.b} ${t} a day for ${p.a} days. How many ${t} does ${n} paint?`,
    (p, _n, t) => `${p.b} ${t} fit in one basket. How many ${t} fit in ${p.a} baskets?`,
    (p, _n, t) => `What do ${p.a} sets of ${p.b} ${t} come to?`,
    (p, _n, t) => `Every one of the ${p.a} members of a club brings ${p.b} ${t}. How many ${t} are brought?`,
  ],
  'sub-add': [
    (p, _n, t) =>
      `A library lent out ${p.b} of its ${p.a} ${t} and then got ${p.c} as a gift. How many ${t} does the library have?`,
    (p, n, t) =>
      `${n} had ${p.a} ${t}, threw away ${p.b} and picked up ${p.c} more. How many ${t} does ${n} have?`,
    (p, _n, t) =>
      `A bus carried ${p.a} ${t}. ${p.b} were unloaded at the first stop and ${p.c} were loaded at the second. How many ${t} are on the bus?`,
    (p, n, t) =>
      `${n} donated ${p.b} of ${p.a} ${t} and later won ${p.c} in a raffle. How many ${t} does ${n} have?`,
    (p, _n, t) =>
      `A tank had ${p.a} ${t}; ${p.b} leaked out before ${p.c} more were poured in. How many ${t} are in the tank?`,
    (p, n, t) =>
      `${n} had ${p.a} ${t}, handed out ${p.b} and was paid ${p.c} more. How many ${t} does ${n} have?`,
  ],
  'add-sub': [
    (p, _n, t) =>
      `A bus carried ${p.a} ${t}. ${p.b} were loaded at the first stop and ${p.c} were unloaded at the second. How many ${t} are on the bus?`,
    (p, n, t) =>
      `${n} had ${p.a} ${t}, picked up ${p.b} more and threw away ${p.c}. How many ${t} does ${n} have?`,
    (p, _n, t) =>
      `A tank had ${p.a} ${t}; ${p.b} more were poured in before ${p.c} leaked out. How many ${t} are in the tank?`,
    (p, _n, t) =>
      `A library got ${p.b} ${t} as a gift, added them to its ${p.a} and then lent out ${p.c}. How many ${t} does the library have?`,
    (p, n, t) =>
      `${n} inherited ${p.a} ${t}, bought ${p.b} and donated ${p.c}. How many ${t} does ${n} have?`,
    (p, _n, t) =>
      `A team had ${p.a} ${t}, gained ${p.b} in a bonus round and gave up ${p.c} as a penalty. How many ${t} does the team have?`,
  ],
  'mul-add': [
    (p, n, t) =>
      `${n} fills ${p.a} baskets with ${p.b} ${t} each and has ${p.c} left over. How many ${t} did ${n} have?`,
    (p, _n, t) => `A bakery makes ${p.a} trays of ${p.b} ${t} and ${p.c} extra. How many ${t} does it make?`,
    (p, _n, t) =>
      `Every one of ${p.a} students brings ${p.b} ${t}, and the teacher brings ${p.c}. How many ${t} are brought in all?`,
    (p, _n, t) =>
      `A bus makes ${p.a} trips with ${p.b} ${t} each time and one more trip with ${p.c}. How many ${t} does it carry?`,
    (p, n, t) =>
      `${n} paints ${p.b} ${t} a day for ${p.a} days and ${p.c} on the last evening. How many ${t} does ${n} paint?`,
    (p, _n, t) =>
      `A club has ${p.c} ${t} in a drawer and buys ${p.a} boxes of ${p.b} more. How many ${t} does the club have?`,
  ],
};

// Held-out phrasings: other sentence shapes and verbs, for validation only, three a kind. val.parquet asks every kind
// and phrasing in turn, so each is about the same share of the score. The first of each kind was the only one until
// 2026-11-30 (val-one-phrasing.parquet, still written as it was): with one held-out phrasing a kind, a seed's score
// hinged on how it read six sentences.
export const VAL_TEMPLATES: Record<Problem['kind'], Template[]> = {
  add: [
    (p, n, t) =>
      `${n} started with ${p.a} ${t} and was given another ${p.b}. What is the total number of ${t}?`,
    (p, n, t) =>
      `${n} kept ${p.a} ${t} in a cupboard, and a neighbour dropped off ${p.b} more. How many ${t} are in the cupboard now?`,
    (p, _n, t) =>
      `Last month a museum owned ${p.a} ${t}; this month it acquired ${p.b}. How many ${t} does the museum own?`,
  ],
  sub: [
    (p, _n, t) =>
      `There were ${p.a} ${t} in a jar. After ${p.b} were taken out, how many ${t} stayed in the jar?`,
    (p, n, t) => `${n} printed ${p.a} ${t} and mailed ${p.b} of them. How many ${t} does ${n} still hold?`,
    (p, _n, t) =>
      `A chest contained ${p.a} ${t} until ${p.b} were stolen. How many ${t} does the chest contain now?`,
  ],
  mul: [
    (p, _n, t) => `${p.a} children each collect ${p.b} ${t}. How many ${t} do they collect together?`,
    (p, n, t) =>
      `${n} stacks ${p.a} piles of ${t}, and every pile has ${p.b} of them. How many ${t} has ${n} stacked?`,
    (p, _n, t) =>
      `A hall has ${p.a} tables, and ${p.b} ${t} are placed at each table. How many ${t} are placed in the hall?`,
  ],
  'sub-add': [
    (p, _n, t) =>
      `A stall began the day with ${p.a} ${t}. It sold ${p.b} in the morning and restocked ${p.c} at noon. How many ${t} does it have?`,
    (p, n, t) =>
      `${n} owned ${p.a} ${t}. A storm ruined ${p.b} of them, and later a cousin offered ${n} ${p.c} new ones. How many ${t} does ${n} own now?`,
    (p, _n, t) =>
      `A collector with ${p.a} ${t} auctioned off ${p.b} and then acquired ${p.c} at a fair. How many ${t} does the collector have?`,
  ],
  'add-sub': [
    (p, n, t) =>
      `${n} owned ${p.a} ${t}, found ${p.b} more and lost ${p.c}. How many ${t} does ${n} own now?`,
    (p, _n, t) =>
      `A vendor stocked ${p.a} ${t}, took in ${p.b} from a supplier, then let ${p.c} go to customers. How many ${t} are left with the vendor?`,
    (p, n, t) =>
      `${n} held ${p.a} ${t}. A friend contributed ${p.b}, and ${n} misplaced ${p.c}. How many ${t} does ${n} hold now?`,
  ],
  'mul-add': [
    (p, _n, t) =>
      `${p.a} crates hold ${p.b} ${t} apiece and ${p.c} ${t} lie beside them. How many ${t} are there?`,
    (p, n, t) =>
      `${n} owns ${p.a} albums that hold ${p.b} ${t} each, plus ${p.c} ${t} not yet sorted. How many ${t} does ${n} own?`,
    (p, _n, t) =>
      `A shipment is ${p.a} cases of ${p.b} ${t} and a bag of ${p.c} more. How many ${t} are in the shipment?`,
  ],
};

// A second held-out set, the dev split (dev.parquet): other sentence shapes and verbs again, three a kind, shared
// with neither training, the wide phrasings, the verb bank nor VAL_TEMPLATES, with names and objects of its own. It
// is for choosing among a run's policies (`toolrl select`, README.md) so that val.parquet stays unseen by the choice.
export const DEV_TEMPLATES: Record<Problem['kind'], Template[]> = {
  add: [
    (p, n, t) =>
      `A teacher presented ${n} with ${p.b} ${t} to go with the ${p.a} ${n} already had. How many ${t} does ${n} possess?`,
    (p, _n, t) =>
      `A shelter looked after ${p.a} ${t} and rescued another ${p.b}. How many ${t} does the shelter look after now?`,
    (p, n, t) =>
      `${n} scooped up ${p.b} ${t} and tipped them onto a heap of ${p.a}. How many ${t} are in the heap?`,
  ],
  sub: [
    (p, n, t) => `${n} had ${p.a} ${t} and surrendered ${p.b} at the gate. How many ${t} did ${n} keep?`,
    (p, _n, t) => `A shop had ${p.a} ${t}; ${p.b} melted in the heat. How many ${t} survived?`,
    (p, _n, t) =>
      `A guard confiscated ${p.b} of the ${p.a} ${t} a visitor carried. How many ${t} did the visitor keep?`,
  ],
  mul: [
    (p, n, t) => `${n} buys ${p.a} packets, each containing ${p.b} ${t}. How many ${t} does ${n} buy?`,
    (p, _n, t) =>
      `A garden has ${p.a} beds with ${p.b} ${t} planted in every bed. How many ${t} are planted in the garden?`,
    (p, _n, t) => `Each of ${p.a} cabinets displays ${p.b} ${t}. How many ${t} are displayed?`,
  ],
  'sub-add': [
    (p, _n, t) =>
      `A harbour held ${p.a} ${t}, dispatched ${p.b} on Friday and welcomed ${p.c} on Monday. How many ${t} does the harbour hold now?`,
    (p, n, t) =>
      `${n} had ${p.a} ${t}, surrendered ${p.b} at a checkpoint and was presented with ${p.c} afterwards. How many ${t} does ${n} have?`,
    (p, _n, t) =>
      `A cabinet had ${p.a} ${t}. Visitors pocketed ${p.b}, and a curator replenished it with ${p.c}. How many ${t} are in the cabinet?`,
  ],
  'add-sub': [
    (p, _n, t) =>
      `A harbour held ${p.a} ${t}, welcomed ${p.b} more and dispatched ${p.c}. How many ${t} does the harbour hold now?`,
    (p, n, t) =>
      `${n} had ${p.a} ${t}, was presented with ${p.b} by a teacher and surrendered ${p.c} at the gate. How many ${t} does ${n} have now?`,
    (p, _n, t) =>
      `A cabinet had ${p.a} ${t}; a curator replenished it with ${p.b} and visitors pocketed ${p.c}. How many ${t} are in the cabinet?`,
  ],
  'mul-add': [
    (p, n, t) =>
      `${n} buys ${p.a} packets of ${p.b} ${t} and is presented with ${p.c} spare ones. How many ${t} does ${n} end up with?`,
    (p, _n, t) =>
      `A garden has ${p.a} beds of ${p.b} ${t} and a corner patch of ${p.c}. How many ${t} grow in the garden?`,
    (p, _n, t) =>
      `Each of ${p.a} cabinets displays ${p.b} ${t}, and the entrance displays ${p.c} more. How many ${t} are displayed?`,
  ],
};
