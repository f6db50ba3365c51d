import { type Static, Type } from '@sinclair/typebox'
import { Envelope, Named, Timestamp } from './common.js'
import { EVENT_NAMES, type EventName } from './events.js'

const FEED_LIMIT_DEFAULT = 100
const FEED_LIMIT_MAX = 1000
/** Longest long poll: below the usual 60 s idle timeout of proxies and load balancers in between. */
const FEED_WAIT_MAX_SECONDS = 30
/** `after=now`: start at the current horizon instead of a position read earlier. */
export const FEED_NOW = 'now'

// <transaction id>-<event id>, decimal: at most 19 digits for an xid8 (below 2^64) and 18 for an
// id (below 2^63), so any text the pattern admits is a valid value for the database.
const POSITION = '(0|[1-9][0-9]{0,18})-(0|[1-9][0-9]{0,17})'

const Position = (description: string) =>
  Type.String({ pattern: `^${POSITION}$`, maxLength: 40, description, examples: ['48213-90417'] })

const FeedPosition = Position(
  'Where this event is in the feed. Opaque: store it and send it back as `after` to read on after this event; never compare or build one.',
)

const eventName = EVENT_NAMES.map((name) => name.replace('.', '\\.')).join('|')

export const ChangeFeedQuery = Type.Object(
  {
    after: Type.Optional(
      Type.String({
        pattern: `^(${FEED_NOW}|${POSITION})$`,
        maxLength: 40,
        description:
          'Where to read on from: the `position` of the previous answer, or of the last event processed. Absent: from the first event. `now`: from the current horizon, skipping every event so far; read `now` once, then do a full sync of the records, then follow the feed from the position that call returned: events of changes the sync already saw may come again (at least once), none is missed.',
        examples: ['48213-90417', FEED_NOW],
      }),
    ),
    types: Type.Optional(
      Type.String({
        pattern: `^(${eventName})(,(${eventName}))*$`,
        maxLength: 512,
        description: `Only these events, comma-separated: ${EVENT_NAMES.join(', ')}. Absent: all of them. An unknown name is a 400.`,
        examples: ['patient.created,patient.updated'],
      }),
    ),
    limit: Type.Integer({
      minimum: 1,
      maximum: FEED_LIMIT_MAX,
      default: FEED_LIMIT_DEFAULT,
      description: `Most events in one answer, default ${FEED_LIMIT_DEFAULT}, at most ${FEED_LIMIT_MAX} (larger is a 400)`,
    }),
    wait: Type.Integer({
      minimum: 0,
      maximum: FEED_WAIT_MAX_SECONDS,
      default: 0,
      description: `Long poll, in seconds (at most ${FEED_WAIT_MAX_SECONDS}): when no event is available, the answer waits until one commits or the time is up, then returns what there is, possibly nothing. 0: answer at once.`,
    }),
  },
  { additionalProperties: false },
)
export type ChangeFeedQuery = Static<typeof ChangeFeedQuery>

export const FeedEvent = Named(
  'ChangeEvent',
  Type.Object(
    {
      position: FeedPosition,
      event: Type.Unsafe<EventName>({
        type: 'string',
        enum: [...EVENT_NAMES],
        description: 'The event name, as in the webhook body',
      }),
      timestamp: Timestamp,
      data: Type.Object(
        {},
        {
          additionalProperties: true,
          description:
            'The event’s data, exactly as webhooks carry it; each event’s shape is in the `webhooks` section of this document',
        },
      ),
    },
    {
      description:
        'One event: the webhook body (`event`, `timestamp`, `data`) and its own position, to resume just after it',
    },
  ),
)
export type FeedEvent = Static<typeof FeedEvent>

export const ChangeFeed = Named(
  'ChangeFeed',
  Type.Object({
    events: Type.Array(FeedEvent, { description: 'In feed order; empty when nothing is available yet' }),
    position: Position(
      'Send as `after` next time. Opaque. When the answer is full, the last event’s position; when it is not, it may lie past the last event (even with no events at all): every event before it has been read.',
    ),
    caughtUp: Type.Boolean({
      description:
        'true: every event available right now has been returned; read again later or with `wait`. false: more are available at once.',
    }),
  }),
)
export type ChangeFeed = Static<typeof ChangeFeed>

export const ChangeFeedEnvelope = Envelope(ChangeFeed)

export const CHANGE_FEED_DESCRIPTION = [
  'The organization’s events, the same bodies its webhooks receive, in the order their transactions committed: for integrators that cannot receive webhooks. `webhook.test` deliveries are not events of the organization’s records and are not in the feed.',
  'Ordering: an event is handed out only once every transaction that could still commit an event before it has ended, so reading on from a position never skips an event that commits later. Events of one transaction keep their order. A transaction that runs long anywhere on the database holds newer events back until it ends: they are delayed, never lost.',
  'Delivery: each call returns the events after `after`; every event carries its own `position`, so a client can store it as it processes events and resume after the last one done. An event comes again only if the client reads again from an earlier position: at least once. With `after=now` followed by a full sync, changes the sync already saw may come again in the feed.',
  'Long poll: with `wait`, an answer with no event is held until one commits (or the time is up); the answer then carries what there is.',
].join('\n\n')
