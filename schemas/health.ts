import { type Static, Type } from '@sinclair/typebox'
import { Named, StringEnum } from './common.js'

const Status = StringEnum(['UP', 'DOWN'])

const Component = Type.Object({
  status: Status,
  details: Type.Optional(Type.Record(Type.String(), Type.Union([Type.String(), Type.Number()]))),
})

export const Health = Named(
  'Health',
  Type.Object({
    status: Status,
    components: Type.Object({
      db: Component,
      diskSpace: Component,
      ping: Component,
      replicas: Type.Optional(
        Type.Object(Component.properties, {
          description:
            'With read replicas (DATABASE_READ_URLS): each one’s state (UP, LAGGING, DOWN) and lag. UP only when every replica takes reads; the service stays UP without them, reading the primary',
        }),
      ),
    }),
  }),
)
export type Health = Static<typeof Health>

export const Probe = Named('Probe', Type.Object({ status: Status }))
