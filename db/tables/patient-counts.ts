/** Live patients per organization and status, spread over shards; maintained by a trigger only. */
export interface PatientCountsTable {
  organization_id: number
  status: string
  shard: number
  live_count: number
}
