// What other areas use of SMART App Launch: the token endpoint's authorization_code grant, and the
// token set of an app's session.
export { appTokenSet, authorizationCodeGrant } from './code-grant.js'
