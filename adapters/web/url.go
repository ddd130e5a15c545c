package web

// PanelURL is the panel's address without any token: what may be printed
// or logged when the token is configured.
func (s *Server) PanelURL() string { return s.baseURL() + "/" }
