import { SignJWT } from 'jose'

export interface JitsiSettings {
  domain: string
  appId: string
  appSecret: string
}

export interface JitsiParticipant {
  id: string
  name: string
  email: string | null
  moderator: boolean
}

/**
 * A token in Jitsi's JWT format (prosody token authentication): HS256 with the app secret, `aud`
 * "jitsi", `iss` the app id, `sub` the Jitsi domain, the room, and the participant in `context.user`.
 */
export async function jitsiToken(
  settings: JitsiSettings,
  room: string,
  participant: JitsiParticipant,
  lifetimeSeconds: number,
): Promise<string> {
  const now = Math.floor(Date.now() / 1000)
  return (
    new SignJWT({
      room,
      context: {
        user: {
          id: participant.id,
          name: participant.name,
          ...(participant.email ? { email: participant.email } : {}),
          moderator: participant.moderator,
        },
      },
      moderator: participant.moderator,
    })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setAudience('jitsi')
      .setIssuer(settings.appId)
      .setSubject(settings.domain)
      .setIssuedAt(now)
      // A little slack for clocks of the video bridge that run behind.
      .setNotBefore(now - 10)
      .setExpirationTime(now + lifetimeSeconds)
      .sign(new TextEncoder().encode(settings.appSecret))
  )
}

export const meetingUrl = (settings: JitsiSettings, room: string, token: string) =>
  `https://${settings.domain}/${room}?jwt=${token}`
