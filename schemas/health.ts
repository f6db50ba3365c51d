import { type Static, Type } from '@sinclair/typebox'

const Status = Type.Union([Type.Literal('UP'), Type.Literal('DOWN')])

const Component = Type.Object({
  status: Status,
  details: Type.Optional(Type.Record(Type.String(), Type.Union([Type.String(), Type.Number()]))),
})

export const Health = Type.Object({
  status: Status,
  components: Type.Object({ db: Component, diskSpace: Component, ping: Component }),
})
export type Health = Static<typeof Health>

export const Probe = Type.Object({ status: Status })
